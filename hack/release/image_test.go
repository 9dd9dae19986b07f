package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Tests of release-image on small stand-in binaries: no release needed.

var unixEpoch = time.Unix(0, 0).UTC()

func TestGzipTarIsReproducible(t *testing.T) {
	files := []file{
		{Name: "etc", Mode: 0o755, Dir: true},
		{Name: "etc/passwd", Mode: 0o644, Contents: []byte("root:x:0:0::/:/sbin/nologin\n")},
		{Name: "kapp", Mode: 0o755, Contents: []byte("binary")},
	}
	mtime := time.Unix(1700000000, 0)
	a, err := gzipTar(files, mtime)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gzipTar(files, mtime)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same files gave different layers")
	}
	entries := readTarGz(t, a)
	if len(entries) != 3 {
		t.Fatalf("%d entries, want 3", len(entries))
	}
	for _, e := range entries {
		if e.Uid != 0 || e.Gid != 0 || e.Uname != "" || e.Gname != "" {
			t.Errorf("%s: owned by %d:%d (%q:%q), want 0:0", e.Name, e.Uid, e.Gid, e.Uname, e.Gname)
		}
		if !e.ModTime.Equal(mtime) || !e.AccessTime.IsZero() || !e.ChangeTime.IsZero() {
			t.Errorf("%s: times %v %v %v, want only the modification time %v", e.Name, e.ModTime, e.AccessTime, e.ChangeTime, mtime)
		}
	}
	if entries[0].Name != "etc/" || entries[0].Typeflag != tar.TypeDir {
		t.Errorf("first entry %q (type %c), want the directory etc/", entries[0].Name, entries[0].Typeflag)
	}
	if c, err := gzipTar(files, mtime.Add(time.Second)); err != nil || bytes.Equal(a, c) {
		t.Errorf("another time gave the same layer (err %v)", err)
	}
}

func TestWebhookImageIsReproducible(t *testing.T) {
	dir := t.TempDir()
	var bins []platformBinary
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, "kapp-linux-"+arch)
		if err := os.WriteFile(p, []byte("kapp for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, platformBinary{OS: "linux", Architecture: arch, Path: p})
	}
	w := webhookImage{Version: "v1.2.3", CACerts: []byte("certificates"), Binaries: bins, Created: time.Unix(1700000000, 0).UTC()}
	var digests []v1.Hash
	var trees []map[string]string
	for _, out := range []string{"a", "b"} {
		d, err := writeWebhookImage(filepath.Join(dir, out), w)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
		trees = append(trees, readTree(t, filepath.Join(dir, out)))
	}
	if digests[0] != digests[1] {
		t.Fatalf("digests %s and %s", digests[0], digests[1])
	}
	if len(trees[0]) != len(trees[1]) {
		t.Fatalf("%d and %d files", len(trees[0]), len(trees[1]))
	}
	for name, data := range trees[0] {
		if trees[1][name] != data {
			t.Errorf("%s differs", name)
		}
	}
	// Written again in place: the old layout is replaced, not added to.
	if _, err := writeWebhookImage(filepath.Join(dir, "a"), w); err != nil {
		t.Fatal(err)
	}
	if n := len(readTree(t, filepath.Join(dir, "a"))); n != len(trees[0]) {
		t.Errorf("%d files after a second write, want %d", n, len(trees[0]))
	}
	// The system layer is one blob for both platforms: 2 binary layers,
	// 1 system layer, 2 configs, 2 manifests, the index.
	blobs := 0
	for name := range trees[0] {
		if filepath.Dir(name) == filepath.Join("blobs", "sha256") {
			blobs++
		}
	}
	if blobs != 8 {
		t.Errorf("%d blobs, want 8", blobs)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != digests[0] {
		t.Fatalf("index.json %+v, want the image index %s", m.Manifests, digests[0])
	}
}

func TestParsePlatformBinaries(t *testing.T) {
	got, err := parsePlatformBinaries([]string{"linux/amd64=a", "linux/arm64=dir/b"})
	if err != nil {
		t.Fatal(err)
	}
	want := []platformBinary{{"linux", "amd64", "a"}, {"linux", "arm64", "dir/b"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range [][]string{{"linux=a"}, {"linux/amd64"}, {"linux/amd64="}, {"linux/amd64=a", "linux/amd64=b"}} {
		if _, err := parsePlatformBinaries(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// readTarGz returns the headers of a gzipped tarball's entries, in order.
func readTarGz(t *testing.T, gz []byte) []*tar.Header {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []*tar.Header
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
}

// readTree returns the files below dir by relative path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
