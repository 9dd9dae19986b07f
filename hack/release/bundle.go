package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"carvel.dev/imgpkg/pkg/imgpkg/lockconfig"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"gopkg.in/yaml.v3"
)

// The Carvel package of the webhook (carvel-package/ of the repository):
// an imgpkg bundle of its templates (config/) whose .imgpkg/images.yml pins
// the webhook's image by digest, and a package repository bundle
// (packages/ with the PackageMetadata and the release's Package, which
// names the package bundle by digest), both written as imgpkg writes them:
// an OCI image labelled dev.carvel.imgpkg.bundle, its one layer the
// bundle's directory.
const (
	// PackageRefName is the package's name (Package spec.refName,
	// PackageMetadata's name).
	PackageRefName = "crd-upgrade-safety-webhook.kapp.k14s.io"
	// ImagePlaceholder is the image of the templates' values that a release
	// sets (examples/webhook/deployment.yaml has the same).
	ImagePlaceholder = "ghcr.io/crdsafety/kapp:VERSION"
	// kbldIDAnnotation names, in images.yml, the reference the templates
	// hold: kbld replaces it with the digest reference.
	kbldIDAnnotation = "kbld.carvel.dev/id"
	// BundleLabel marks an image as an imgpkg bundle (imgpkg's
	// bundle.BundleConfigLabel; that package is not imported: it brings
	// every cloud registry's credential helper).
	BundleLabel = "dev.carvel.imgpkg.bundle"
)

// packageRepository is what the two bundles are built from.
type packageRepository struct {
	Version     string // vX.Y.Z[-PRE]: the tags, and the Package's version without the v
	PackageDir  string // carvel-package/: config/, package.yaml, metadata.yaml
	ImageRepo   string // the webhook image's repository (the templates' image is ImageRepo:Version)
	ImageDigest v1.Hash
	BundleRepo  string // the repository of the package bundle
	Created     time.Time
}

// packageVersion is the Package's version: Version without the v.
func (p packageRepository) packageVersion() string { return strings.TrimPrefix(p.Version, "v") }

// bundleImage is an imgpkg bundle of files (path -> content; directories
// are added): an OCI image with imgpkg's bundle label and one layer.
func bundleImage(files map[string][]byte, created time.Time, title string) (v1.Image, error) {
	var paths []string
	dirs := map[string]bool{}
	for p := range files {
		paths = append(paths, p)
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		paths = append(paths, d+"/")
	}
	sort.Strings(paths)
	var entries []file
	for _, p := range paths {
		if strings.HasSuffix(p, "/") {
			entries = append(entries, file{Name: strings.TrimSuffix(p, "/"), Mode: 0o755, Dir: true})
			continue
		}
		entries = append(entries, file{Name: p, Mode: 0o644, Contents: files[p]})
	}
	gz, err := gzipTar(entries, created)
	if err != nil {
		return nil, err
	}
	layer, err := layerOf(gz)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "release-image: " + title,
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: created}
	cfg.OS, cfg.Architecture = "linux", "amd64" // what imgpkg writes; nothing runs it
	cfg.Config.Labels = map[string]string{
		BundleLabel:                       "true",
		"org.opencontainers.image.title":  title,
		"org.opencontainers.image.source": RepositoryURL,
	}
	return mutate.ConfigFile(img, cfg)
}

// imagesLock is the .imgpkg/images.yml of a bundle: each reference (as the
// bundle's files hold it) -> its digest reference.
func imagesLock(refs map[string]string) ([]byte, error) {
	lock := lockconfig.NewEmptyImagesLock()
	var ids []string
	for id := range refs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		lock.AddImageRef(lockconfig.ImageRef{Image: refs[id], Annotations: map[string]string{kbldIDAnnotation: id}})
	}
	if err := lock.Validate(); err != nil {
		return nil, fmt.Errorf("images.yml: %w", err)
	}
	return lock.AsBytes()
}

// packageBundle is the package bundle: config/ of PackageDir, its image
// placeholder set to ImageRepo:Version, and .imgpkg/images.yml pinning that
// to ImageRepo@ImageDigest.
func (p packageRepository) packageBundle() (v1.Image, error) {
	files := map[string][]byte{}
	image := p.ImageRepo + ":" + p.Version
	if _, err := name.ParseReference(image, name.StrictValidation); err != nil {
		return nil, fmt.Errorf("the webhook image %s: %w", image, err)
	}
	configDir := filepath.Join(p.PackageDir, "config")
	placeholderSeen := false
	err := filepath.WalkDir(configDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(ImagePlaceholder)) {
			placeholderSeen = true
			data = bytes.ReplaceAll(data, []byte(ImagePlaceholder), []byte(image))
		}
		rel, err := filepath.Rel(p.PackageDir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the package's templates: %w", err)
	}
	if !placeholderSeen {
		return nil, fmt.Errorf("%s: no template names the image %s to set", configDir, ImagePlaceholder)
	}
	lock, err := imagesLock(map[string]string{image: p.ImageRepo + "@" + p.ImageDigest.String()})
	if err != nil {
		return nil, err
	}
	files[".imgpkg/images.yml"] = lock
	return bundleImage(files, p.Created, "crd-upgrade-safety-webhook package "+p.Version)
}

// repositoryBundle is the package repository bundle: the PackageMetadata
// and the Package of this version, which fetches the package bundle
// BundleRepo@bundleDigest, under packages/; .imgpkg/images.yml lists the
// package bundle.
func (p packageRepository) repositoryBundle(bundleDigest v1.Hash) (v1.Image, error) {
	bundleRef := p.BundleRepo + "@" + bundleDigest.String()
	if _, err := name.NewDigest(bundleRef, name.StrictValidation); err != nil {
		return nil, fmt.Errorf("the package bundle %s: %w", bundleRef, err)
	}
	pkg, err := readYAMLMap(filepath.Join(p.PackageDir, "package.yaml"))
	if err != nil {
		return nil, err
	}
	version := p.packageVersion()
	if err := setPath(pkg, PackageRefName+"."+version, "metadata", "name"); err != nil {
		return nil, err
	}
	for _, set := range []struct {
		value any
		path  []any
	}{
		{version, []any{"spec", "version"}},
		{p.Created.Format(time.RFC3339), []any{"spec", "releasedAt"}},
		{bundleRef, []any{"spec", "template", "spec", "fetch", 0, "imgpkgBundle", "image"}},
		{p.ImageRepo + ":" + p.Version, []any{"spec", "valuesSchema", "openAPIv3", "properties", "image", "default"}},
	} {
		if err := setPath(pkg, set.value, set.path...); err != nil {
			return nil, fmt.Errorf("package.yaml: %w", err)
		}
	}
	if ref, _ := getPath(pkg, "spec", "refName"); ref != PackageRefName {
		return nil, fmt.Errorf("package.yaml: spec.refName is %v, want %s", ref, PackageRefName)
	}
	meta, err := readYAMLMap(filepath.Join(p.PackageDir, "metadata.yaml"))
	if err != nil {
		return nil, err
	}
	if n, _ := getPath(meta, "metadata", "name"); n != PackageRefName {
		return nil, fmt.Errorf("metadata.yaml: metadata.name is %v, want %s", n, PackageRefName)
	}
	pkgYAML, err := marshalYAML(pkg)
	if err != nil {
		return nil, err
	}
	metaYAML, err := marshalYAML(meta)
	if err != nil {
		return nil, err
	}
	lock, err := imagesLock(map[string]string{bundleRef: bundleRef})
	if err != nil {
		return nil, err
	}
	dir := "packages/" + PackageRefName + "/"
	return bundleImage(map[string][]byte{
		".imgpkg/images.yml":   lock,
		dir + "metadata.yml":   metaYAML,
		dir + version + ".yml": pkgYAML,
	}, p.Created, "crd-upgrade-safety-webhook package repository "+p.Version)
}

// build returns both bundles.
func (p packageRepository) build() (pkgBundle, repoBundle v1.Image, err error) {
	pkgBundle, err = p.packageBundle()
	if err != nil {
		return nil, nil, err
	}
	d, err := pkgBundle.Digest()
	if err != nil {
		return nil, nil, err
	}
	repoBundle, err = p.repositoryBundle(d)
	return pkgBundle, repoBundle, err
}

func readYAMLMap(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%s: empty", path)
	}
	return m, nil
}

// getPath reads the value at path (map keys, list indexes) of v.
func getPath(v any, path ...any) (any, error) {
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: not a map", pathString(path[:i]))
			}
			v, ok = m[k]
			if !ok {
				return nil, fmt.Errorf("%s: missing", pathString(path[:i+1]))
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil, fmt.Errorf("%s: no item %d", pathString(path[:i]), k)
			}
			v = l[k]
		}
	}
	return v, nil
}

// setPath sets the value at path of v, whose parent must exist.
func setPath(v any, value any, path ...any) error {
	parent, err := getPath(v, path[:len(path)-1]...)
	if err != nil {
		return err
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: not a map", pathString(path[:len(path)-1]))
	}
	m[path[len(path)-1].(string)] = value
	return nil
}

func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch k := p.(type) {
		case string:
			b.WriteString("." + k)
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		}
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()[1:]
}

// marshalYAML is v as YAML, indented by two spaces, map keys sorted.
func marshalYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
