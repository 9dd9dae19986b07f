package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func runPackageRepository(args []string, stdout io.Writer, epoch time.Time) error {
	fs := flag.NewFlagSet("package-repository", flag.ContinueOnError)
	version := fs.String("version", "", "the release's version: the tags, the Package's version without the v")
	packageDir := fs.String("package-dir", "carvel-package", "the package's sources: config/, package.yaml, metadata.yaml")
	imageRepo := fs.String("image-repo", "", "the webhook image's repository")
	imageLayout := fs.String("image-layout", "", "the OCI layout of the webhook's image (the release's image/): its index's digest is pinned")
	imageDigest := fs.String("image-digest", "", "the webhook image's digest (instead of -image-layout)")
	bundleRepo := fs.String("bundle-repo", "", "the package bundle's repository")
	repositoryRepo := fs.String("repository-repo", "", "the package repository bundle's repository")
	out := fs.String("out", "", "write OCI layouts OUT/package-bundle and OUT/package-repository")
	push := fs.Bool("push", false, "push to BUNDLE-REPO:V and REPOSITORY-REPO:V")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *imageRepo == "" || *bundleRepo == "" || *repositoryRepo == "" || (*out == "") == !*push ||
		(*imageLayout == "") == (*imageDigest == "") || fs.NArg() != 0 {
		return errUsage
	}
	var digest v1.Hash
	var err error
	if *imageLayout != "" {
		digest, err = layoutDigest(*imageLayout)
	} else {
		digest, err = v1.NewHash(*imageDigest)
	}
	if err != nil {
		return fmt.Errorf("the webhook image's digest: %w", err)
	}
	p := packageRepository{Version: *version, PackageDir: *packageDir, ImageRepo: *imageRepo, ImageDigest: digest,
		BundleRepo: *bundleRepo, Created: epoch}
	pkgBundle, repoBundle, err := p.build()
	if err != nil {
		return err
	}
	for _, b := range []struct {
		img        v1.Image
		repo, what string
	}{{pkgBundle, *bundleRepo, "package-bundle"}, {repoBundle, *repositoryRepo, "package-repository"}} {
		d, err := b.img.Digest()
		if err != nil {
			return err
		}
		if *push {
			ref, err := name.NewTag(b.repo+":"+*version, name.StrictValidation)
			if err != nil {
				return fmt.Errorf("%s: %w", b.what, err)
			}
			if err := remote.Write(ref, b.img); err != nil {
				return fmt.Errorf("pushing the %s to %s: %w", b.what, ref, err)
			}
			fmt.Fprintf(stdout, "%s: %s@%s\n", b.what, b.repo, d)
			continue
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		dir := filepath.Join(*out, b.what)
		if err := writeImageLayout(dir, *version, b.img); err != nil {
			return fmt.Errorf("%s: %w", b.what, err)
		}
		fmt.Fprintf(stdout, "%s: %s (%s@%s)\n", dir, d, b.repo, d)
	}
	return nil
}

// layoutDigest is the digest of the one image or index of an OCI layout
// written by writeWebhookImage.
func layoutDigest(dir string) (v1.Hash, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	if len(m.Manifests) != 1 {
		return v1.Hash{}, fmt.Errorf("%s: %d manifests in index.json, want 1", dir, len(m.Manifests))
	}
	return m.Manifests[0].Digest, nil
}

// writeImageLayout writes img as an OCI image layout in dir (replaced), its
// index.json naming it by tag.
func writeImageLayout(dir, tag string, img v1.Image) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			MediaType:   types.OCIManifestSchema1,
			Annotations: map[string]string{"org.opencontainers.image.ref.name": tag},
		},
	})
	if _, err := layout.Write(tmp, top); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

func runRegistry(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "the address to serve on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errUsage
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(stdout, "serving an OCI registry on %s\n", l.Addr())
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case <-sig:
		return srv.Close()
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

func runStandInImage(args []string, stdout io.Writer, epoch time.Time) error {
	fs := flag.NewFlagSet("stand-in-image", flag.ContinueOnError)
	push := fs.String("push", "", "the reference to push to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *push == "" || fs.NArg() != 0 {
		return errUsage
	}
	ref, err := name.ParseReference(*push, name.StrictValidation)
	if err != nil {
		return err
	}
	img, err := bundleImage(map[string][]byte{"README": []byte("stands in for the webhook's image where nothing runs it\n")}, epoch, "stand-in for the webhook's image")
	if err != nil {
		return err
	}
	// Not a bundle: without imgpkg's label.
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": "stand-in"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	if err := remote.Write(ref, img); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	out, _ := json.Marshal(ref.Context().Digest(d.String()).String())
	fmt.Fprintf(stdout, "%s\n", out[1:len(out)-1])
	return nil
}
