package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinaryPath is where both images keep kapp: the webhook's, and
	// kapp-controller's (its Dockerfile copies its tools into / and puts /
	// first on PATH).
	BinaryPath = "/kapp"
	// WebhookUser runs the webhook's image: not root (distroless's
	// "nonroot"; examples/webhook/deployment.yaml's runAsUser).
	WebhookUser = "65532:65532"
	// CACertsPath is where Go's crypto/x509 looks first on Linux.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// RepositoryURL is the source of the images (a label).
	RepositoryURL = "https://github.com/crdsafety/kapp"
)

// WebhookCmd is the image's default arguments to /kapp.
var WebhookCmd = []string{"tools", "crd-upgrade-safety-webhook"}

// webhookImage is what the webhook's image is built from.
type webhookImage struct {
	Version  string
	CACerts  []byte
	Binaries []platformBinary
	Created  time.Time
}

// file is an entry of a layer.
type file struct {
	Name     string // without a leading slash
	Mode     int64
	Dir      bool
	Contents []byte
}

// gzipTar returns the gzipped tarball of files, in their order, every
// entry owned by 0:0 with the time mtime: the same files give the same
// bytes.
func gzipTar(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	// No name or time in the gzip header.
	tw := tar.NewWriter(zw)
	for _, f := range files {
		hdr := &tar.Header{
			Name:    f.Name,
			Mode:    f.Mode,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.Dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Contents))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Contents); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layerOf is a layer of the gzipped tarball gz, as an OCI layer.
func layerOf(gz []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// binaryLayer is the gzipped tarball of the binary at path as /kapp.
func binaryLayer(path string, mtime time.Time) ([]byte, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	return gzipTar([]file{{Name: BinaryPath[1:], Mode: 0o755, Contents: bin}}, mtime)
}

// writeKappControllerLayer writes the layer that puts the binary at path
// where kapp-controller's image keeps kapp, and returns its digest.
func writeKappControllerLayer(out, path string, mtime time.Time) (v1.Hash, error) {
	gz, err := binaryLayer(path, mtime)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.WriteFile(out, gz, 0o644); err != nil {
		return v1.Hash{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(gz))
	return h, err
}

// systemFiles is the webhook image's first layer: the CA certificates, the
// users (root, and nonroot that runs it) and /tmp.
func systemFiles(caCerts []byte) []file {
	return []file{
		{Name: "etc", Mode: 0o755, Dir: true},
		{Name: "etc/group", Mode: 0o644, Contents: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Name: "etc/passwd", Mode: 0o644, Contents: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")},
		{Name: "etc/ssl", Mode: 0o755, Dir: true},
		{Name: "etc/ssl/certs", Mode: 0o755, Dir: true},
		{Name: CACertsPath[1:], Mode: 0o644, Contents: caCerts},
		{Name: "tmp", Mode: 0o1777, Dir: true},
	}
}

// webhookIndex builds the webhook's image index.
func webhookIndex(w webhookImage) (v1.ImageIndex, error) {
	if len(w.Binaries) == 0 {
		return nil, fmt.Errorf("no binary")
	}
	systemGz, err := gzipTar(systemFiles(w.CACerts), w.Created)
	if err != nil {
		return nil, err
	}
	system, err := layerOf(systemGz)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "kapp with CRD upgrade safety: crd-upgrade-safety-webhook",
		"org.opencontainers.image.version":     w.Version,
		"org.opencontainers.image.source":      RepositoryURL,
		"org.opencontainers.image.description": "kapp (carvel.dev/kapp) with the CRDUpgradeSafety preflight check and its admission webhook",
	}
	created := v1.Time{Time: w.Created}

	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range w.Binaries {
		binGz, err := binaryLayer(b.Path, w.Created)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", b.OS, b.Architecture, err)
		}
		bin, err := layerOf(binGz)
		if err != nil {
			return nil, err
		}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.Append(img,
			mutate.Addendum{Layer: system, MediaType: types.OCILayer, History: v1.History{
				Created: created, CreatedBy: "release-image: CA certificates, users root and nonroot (65532), /tmp",
			}},
			mutate.Addendum{Layer: bin, MediaType: types.OCILayer, History: v1.History{
				Created: created, CreatedBy: fmt.Sprintf("release-image: kapp %s for %s/%s as %s", w.Version, b.OS, b.Architecture, BinaryPath),
			}},
		)
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS = b.OS
		cfg.Architecture = b.Architecture
		cfg.Created = created
		cfg.Config = v1.Config{
			User:       WebhookUser,
			Entrypoint: []string{BinaryPath},
			Cmd:        WebhookCmd,
			Env:        []string{"PATH=/", "HOME=/tmp"},
			WorkingDir: "/",
			Labels:     labels,
		}
		img, err = mutate.ConfigFile(img, cfg)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: b.OS, Architecture: b.Architecture},
			},
		})
	}
	return mutate.Annotations(idx, map[string]string{
		"org.opencontainers.image.version": w.Version,
		"org.opencontainers.image.source":  RepositoryURL,
		"org.opencontainers.image.created": w.Created.Format(time.RFC3339),
	}).(v1.ImageIndex), nil
}

// writeWebhookImage writes the webhook's image index as an OCI image layout
// in dir (replaced), its index.json naming it by the tag w.Version, and
// returns the index's digest.
func writeWebhookImage(dir string, w webhookImage) (v1.Hash, error) {
	idx, err := webhookIndex(w)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	// Written beside dir, then moved into place: no blob of an older
	// layout stays, and no half-written layout takes its place.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: idx,
		Descriptor: v1.Descriptor{
			MediaType:   types.OCIImageIndex,
			Annotations: map[string]string{"org.opencontainers.image.ref.name": w.Version},
		},
	})
	if _, err := layout.Write(tmp, top); err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return v1.Hash{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return v1.Hash{}, err
	}
	return digest, nil
}
