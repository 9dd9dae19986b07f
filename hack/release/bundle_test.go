package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"carvel.dev/imgpkg/pkg/imgpkg/lockconfig"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"gopkg.in/yaml.v3"
)

// bundleFiles is the files of an imgpkg bundle's one layer.
func bundleFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels[BundleLabel] != "true" {
		t.Errorf("labels %v: not an imgpkg bundle (%s)", cfg.Config.Labels, BundleLabel)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	readTar(t, zr, func(h *tar.Header, data []byte) {
		if h.Typeflag == tar.TypeReg {
			files[h.Name] = data
		}
	})
	return files
}

// lockOf reads a bundle's .imgpkg/images.yml with imgpkg's own reader: id
// (kbld.carvel.dev/id) -> image.
func lockOf(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	lock, err := lockconfig.NewImagesLockFromBytes(files[".imgpkg/images.yml"])
	if err != nil {
		t.Fatalf(".imgpkg/images.yml: %v\n%s", err, files[".imgpkg/images.yml"])
	}
	out := map[string]string{}
	for _, i := range lock.Images {
		out[i.Annotations[kbldIDAnnotation]] = i.Image
	}
	return out
}

// checkPackageRepository checks the two bundles: the package bundle holds
// config/ with the image set and pinned, the repository bundle the
// PackageMetadata and the Package fetching the package bundle by digest.
func checkPackageRepository(t *testing.T, pkgBundle, repoBundle v1.Image, version, imageRepo string, imageDigest v1.Hash, bundleRepo string) {
	t.Helper()
	files := bundleFiles(t, pkgBundle)
	for _, f := range []string{"config/values-schema.yaml", "config/deployment.yaml", "config/webhook.yaml", "config/names.star", "config/networkpolicy.yaml"} {
		if _, ok := files[f]; !ok {
			t.Errorf("the package bundle has no %s", f)
		}
	}
	if !bytes.Contains(files["config/values-schema.yaml"], []byte("image: "+imageRepo+":"+version+"\n")) {
		t.Errorf("config/values-schema.yaml: the image default is not %s:%s:\n%s", imageRepo, version, files["config/values-schema.yaml"])
	}
	if want := map[string]string{imageRepo + ":" + version: imageRepo + "@" + imageDigest.String()}; !maps.Equal(lockOf(t, files), want) {
		t.Errorf("the package bundle's images.yml %v, want %v", lockOf(t, files), want)
	}

	d, err := pkgBundle.Digest()
	if err != nil {
		t.Fatal(err)
	}
	bundleRef := bundleRepo + "@" + d.String()
	files = bundleFiles(t, repoBundle)
	pv := strings.TrimPrefix(version, "v")
	dir := "packages/" + PackageRefName + "/"
	if len(files) != 3 || files[dir+"metadata.yml"] == nil || files[dir+pv+".yml"] == nil {
		t.Fatalf("the repository bundle's files: %v, want .imgpkg/images.yml, %smetadata.yml, %s%s.yml", keys(files), dir, dir, pv)
	}
	var pkg struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			RefName    string `yaml:"refName"`
			Version    string
			ReleasedAt string `yaml:"releasedAt"`
			Template   struct {
				Spec struct {
					Fetch []struct {
						ImgpkgBundle struct{ Image string } `yaml:"imgpkgBundle"`
					}
					Template []map[string]any
					Deploy   []map[string]any
				}
			}
			ValuesSchema struct {
				OpenAPIv3 struct {
					Properties map[string]map[string]any
				} `yaml:"openAPIv3"`
			} `yaml:"valuesSchema"`
		}
	}
	if err := yaml.Unmarshal(files[dir+pv+".yml"], &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Kind != "Package" || pkg.Metadata.Name != PackageRefName+"."+pv || pkg.Spec.RefName != PackageRefName || pkg.Spec.Version != pv {
		t.Errorf("Package %s %s (refName %s, version %s), want %s.%s", pkg.Kind, pkg.Metadata.Name, pkg.Spec.RefName, pkg.Spec.Version, PackageRefName, pv)
	}
	if _, err := time.Parse(time.RFC3339, pkg.Spec.ReleasedAt); err != nil {
		t.Errorf("releasedAt: %v", err)
	}
	if f := pkg.Spec.Template.Spec.Fetch; len(f) != 1 || f[0].ImgpkgBundle.Image != bundleRef {
		t.Errorf("the Package fetches %+v, want the package bundle %s", f, bundleRef)
	}
	if got := pkg.Spec.ValuesSchema.OpenAPIv3.Properties["image"]["default"]; got != imageRepo+":"+version {
		t.Errorf("the values schema's image default %v, want %s:%s", got, imageRepo, version)
	}
	if want := map[string]string{bundleRef: bundleRef}; !maps.Equal(lockOf(t, files), want) {
		t.Errorf("the repository bundle's images.yml %v, want %v", lockOf(t, files), want)
	}
	var meta struct {
		Kind     string
		Metadata struct{ Name string }
	}
	if err := yaml.Unmarshal(files[dir+"metadata.yml"], &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Kind != "PackageMetadata" || meta.Metadata.Name != PackageRefName {
		t.Errorf("metadata.yml: %s %s, want PackageMetadata %s", meta.Kind, meta.Metadata.Name, PackageRefName)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPackageRepositoryBuild: the bundles built from carvel-package/, and
// built again, byte for byte the same; a template without the image
// placeholder is an error.
func TestPackageRepositoryBuild(t *testing.T) {
	digest := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	p := packageRepository{Version: "v1.2.3", PackageDir: filepath.Join(repoRoot, "carvel-package"), ImageRepo: "ghcr.io/crdsafety/kapp",
		ImageDigest: digest, BundleRepo: "ghcr.io/crdsafety/kapp-webhook-package", Created: time.Unix(1700000000, 0).UTC()}
	pkgBundle, repoBundle, err := p.build()
	if err != nil {
		t.Fatal(err)
	}
	checkPackageRepository(t, pkgBundle, repoBundle, p.Version, p.ImageRepo, digest, p.BundleRepo)
	_, again, err := p.build()
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := repoBundle.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("built twice: %s, then %s", d1, d2)
	}
	p.PackageDir = t.TempDir()
	if _, _, err := p.build(); err == nil {
		t.Error("no error for a package without templates")
	}
}

// TestReleasePackageRepository: the release's package bundle and package
// repository bundle pin the release's webhook image index, and crane pushes
// them as they are to a registry (docs/webhook.md, "Install as a Carvel
// package").
func TestReleasePackageRepository(t *testing.T) {
	dir, version := release(t)
	imageDigest, err := layoutDigest(filepath.Join(dir, "image"))
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]v1.Image{}
	for _, b := range []string{"package-bundle", "package-repository"} {
		idx, err := layout.ImageIndexFromPath(filepath.Join(dir, b))
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
			t.Fatalf("%s/index.json: %+v, want one image tagged %s", b, m.Manifests, version)
		}
		if images[b], err = idx.Image(m.Manifests[0].Digest); err != nil {
			t.Fatal(err)
		}
	}
	checkPackageRepository(t, images["package-bundle"], images["package-repository"], version,
		"ghcr.io/crdsafety/kapp", imageDigest, "ghcr.io/crdsafety/kapp-webhook-package")

	host := testRegistry(t)
	for b, img := range images {
		desc := cranePush(t, filepath.Join(dir, b), host+"/crdsafety/kapp-"+b+":"+version)
		if want, _ := img.Digest(); desc.Digest != want {
			t.Errorf("%s pushed as %s, want %s", b, desc.Digest, want)
		}
	}
}

// chartFiles is the files of a chart archive.
func chartFiles(t *testing.T, gz []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	readTar(t, zr, func(h *tar.Header, data []byte) { files[h.Name] = data })
	return files
}

// checkChart checks a chart archive: the chart's files under its name, the
// version and appVersion set, the image value the release's.
func checkChart(t *testing.T, gz []byte, version, image string) {
	t.Helper()
	files := chartFiles(t, gz)
	v := strings.TrimPrefix(version, "v")
	chart := string(files["crd-upgrade-safety-webhook/Chart.yaml"])
	if !strings.Contains(chart, "\nversion: "+v+"\n") || !strings.Contains(chart, "\nappVersion: "+v+"\n") {
		t.Errorf("Chart.yaml: version and appVersion not %s:\n%s", v, chart)
	}
	if values := string(files["crd-upgrade-safety-webhook/values.yaml"]); !strings.Contains(values, "\nimage: "+image+"\n") {
		t.Errorf("values.yaml: image not %s:\n%s", image, values)
	}
	for _, f := range []string{"templates/deployment.yaml", "templates/webhook.yaml", "templates/webhook-unregister.yaml", "templates/networkpolicy.yaml", "values.schema.json"} {
		if files["crd-upgrade-safety-webhook/"+f] == nil {
			t.Errorf("the chart archive has no %s", f)
		}
	}
}

// TestChartArchive: the chart packaged for a release, twice the same bytes.
func TestChartArchive(t *testing.T) {
	dir := filepath.Join(repoRoot, "charts", "crd-upgrade-safety-webhook")
	name, gz, err := chartArchive(dir, "v1.2.3", "ghcr.io/crdsafety/kapp:v1.2.3", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if name != "crd-upgrade-safety-webhook-1.2.3.tgz" {
		t.Errorf("name %s", name)
	}
	checkChart(t, gz, "v1.2.3", "ghcr.io/crdsafety/kapp:v1.2.3")
	if _, again, _ := chartArchive(dir, "v1.2.3", "ghcr.io/crdsafety/kapp:v1.2.3", time.Unix(0, 0)); !bytes.Equal(gz, again) {
		t.Error("packaged twice: different bytes")
	}
}

// TestReleaseChart: the release's chart archive.
func TestReleaseChart(t *testing.T) {
	dir, version := release(t)
	gz, err := os.ReadFile(filepath.Join(dir, "crd-upgrade-safety-webhook-"+strings.TrimPrefix(version, "v")+".tgz"))
	if err != nil {
		t.Fatal(err)
	}
	checkChart(t, gz, version, "ghcr.io/crdsafety/kapp:"+version)
}
