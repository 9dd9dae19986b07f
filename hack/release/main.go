// Command release-image writes the images of a release without a container
// daemon, with go-containerregistry (hack/release.sh runs it):
//
//	release-image webhook -version V -ca-certs FILE -out DIR linux/amd64=BINARY linux/arm64=BINARY
//
// writes the webhook's image as an OCI image layout in DIR: one image index
// (tagged V in the layout's index.json) of an image per platform, each on an
// empty base with two layers: CA certificates, /etc/passwd and /etc/group
// of the non-root user, /tmp (the same layer for every platform); then the
// static kapp binary as /kapp. The image runs as 65532:65532, its
// entrypoint is /kapp, its arguments `tools crd-upgrade-safety-webhook`,
// and PATH=/ finds `kapp` (the command of examples/webhook/deployment.yaml).
//
//	release-image kapp-controller-layer -out FILE.tar.gz BINARY
//
// writes a gzipped layer tarball that holds BINARY as /kapp (mode 0755,
// owned by root): where kapp-controller's image keeps its kapp, to be
// appended to that image with `crane append` (docs/kapp-controller.md).
//
//	release-image package-repository -version V -package-dir DIR -image-repo REPO (-image-layout DIR | -image-digest sha256:...)
//	    -bundle-repo REPO -repository-repo REPO (-out DIR | -push)
//
// writes the Carvel package of the webhook (bundle.go): the package bundle
// (DIR/config/ of the package, .imgpkg/images.yml pinning the image
// REPO:V to the index of -image-layout, or to -image-digest) and the
// package repository bundle (packages/: the PackageMetadata, and the Package
// of version V, fetching the package bundle by digest), as imgpkg bundles:
// with -out, as OCI image layouts in OUT/package-bundle and
// OUT/package-repository (tag V); with -push, to BUNDLE-REPO:V and
// REPOSITORY-REPO:V (a registry on loopback is spoken to over HTTP).
//
//	release-image chart -version V -image REF -out DIR CHART_DIR
//
// writes the Helm chart in CHART_DIR as `helm package` would, into
// DIR/NAME-V.tgz (V without the v), its version and appVersion V, its image
// value REF.
//
//	release-image registry -addr 127.0.0.1:0
//
// serves an OCI registry in memory (go-containerregistry's pkg/registry) on
// the address, prints "serving an OCI registry on HOST:PORT", and serves
// until SIGINT or SIGTERM (the end-to-end tests of the package).
//
//	release-image stand-in-image -push REF
//
// pushes a small image that stands in for the webhook's where nothing runs
// it (the end-to-end tests: the clusters run no Pods) and prints its digest
// reference.
//
// The images and bundles are reproducible: every time in them (file times, the image's
// creation time) is $SOURCE_DATE_EPOCH (seconds since 1970; default 0),
// entries are in a fixed order, owned by 0:0, and the same inputs give the
// same bytes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "release-image: %v\n", err)
		os.Exit(1)
	}
}

var errUsage = errors.New(`usage:
  release-image webhook -version V -ca-certs FILE -out DIR linux/amd64=BINARY [linux/arm64=BINARY ...]
  release-image kapp-controller-layer -out FILE.tar.gz BINARY
  release-image package-repository -version V -package-dir DIR -image-repo REPO (-image-layout DIR | -image-digest DIGEST) -bundle-repo REPO -repository-repo REPO (-out DIR | -push)
  release-image chart -version V -image REF -out DIR CHART_DIR
  release-image registry -addr HOST:PORT
  release-image stand-in-image -push REF`)

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	epoch, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	switch args[0] {
	case "webhook":
		fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
		version := fs.String("version", "", "the release's version: the image's tag and label")
		caCerts := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates (PEM) to put in the image")
		out := fs.String("out", "", "the OCI image layout directory to write (replaced)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" || *out == "" || fs.NArg() == 0 {
			return errUsage
		}
		binaries, err := parsePlatformBinaries(fs.Args())
		if err != nil {
			return err
		}
		certs, err := os.ReadFile(*caCerts)
		if err != nil {
			return fmt.Errorf("reading the CA certificates: %w", err)
		}
		digest, err := writeWebhookImage(*out, webhookImage{
			Version:  *version,
			CACerts:  certs,
			Binaries: binaries,
			Created:  epoch,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: image index %s (tag %s)\n", *out, digest, *version)
		return nil
	case "kapp-controller-layer":
		fs := flag.NewFlagSet("kapp-controller-layer", flag.ContinueOnError)
		out := fs.String("out", "", "the layer tarball to write (gzip)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" || fs.NArg() != 1 {
			return errUsage
		}
		digest, err := writeKappControllerLayer(*out, fs.Arg(0), epoch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: layer %s\n", *out, digest)
		return nil
	case "package-repository":
		return runPackageRepository(args[1:], stdout, epoch)
	case "chart":
		fs := flag.NewFlagSet("chart", flag.ContinueOnError)
		version := fs.String("version", "", "the release's version")
		image := fs.String("image", "", "the webhook's image")
		out := fs.String("out", "", "the directory to write NAME-VERSION.tgz into")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" || *image == "" || *out == "" || fs.NArg() != 1 {
			return errUsage
		}
		name, gz, err := chartArchive(fs.Arg(0), *version, *image, epoch)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, name), gz, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", filepath.Join(*out, name))
		return nil
	case "registry":
		return runRegistry(args[1:], stdout)
	case "stand-in-image":
		return runStandInImage(args[1:], stdout, epoch)
	default:
		return errUsage
	}
}

// platformBinary is a binary for one platform of the image.
type platformBinary struct {
	OS, Architecture string
	Path             string
}

// parsePlatformBinaries parses OS/ARCH=PATH arguments, in their order.
func parsePlatformBinaries(args []string) ([]platformBinary, error) {
	var out []platformBinary
	seen := map[string]bool{}
	for _, a := range args {
		platform, path, ok := strings.Cut(a, "=")
		osName, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 || osName == "" || arch == "" || path == "" {
			return nil, fmt.Errorf("%q: want OS/ARCH=BINARY", a)
		}
		if seen[platform] {
			return nil, fmt.Errorf("platform %s given twice", platform)
		}
		seen[platform] = true
		out = append(out, platformBinary{OS: osName, Architecture: arch, Path: path})
	}
	return out, nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/), or 1970.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil || s < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", v)
	}
	return time.Unix(s, 0).UTC(), nil
}
