package main

// Tests of a release that hack/release.sh wrote: RELEASE_DIR names it
// (.cache/release/VERSION; hack/test-release.sh builds one and runs these).
// Without it they skip.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"gopkg.in/yaml.v3"
)

const (
	repoRoot = "../.."
	// The main package and module of the release binaries.
	mainPackage = "github.com/crdsafety/kapp/cmd/kapp"
	mainModule  = "github.com/crdsafety/kapp"
	versionVar  = "github.com/crdsafety/kapp/pkg/kapp/cmd.Version"
	// The kapp module the distribution is built on, as `kapp version`
	// names it on its first line.
	kappModule  = "carvel.dev/kapp"
	kappVersion = "v0.66.0"
)

// platforms of the release binaries (upstream kapp's).
var platforms = []struct{ OS, Arch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

func binaryName(goos, arch string) string {
	n := "kapp-" + goos + "-" + arch
	if goos == "windows" {
		n += ".exe"
	}
	return n
}

// release returns the release directory and its version, or skips.
func release(t *testing.T) (dir, version string) {
	t.Helper()
	dir = os.Getenv("RELEASE_DIR")
	if dir == "" {
		t.Skip("RELEASE_DIR is unset: hack/test-release.sh builds a release and runs these tests on it")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Base(dir)
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestReleaseBinaries: every platform's binary is there, for its platform,
// built as hack/release.sh builds a release (static, paths trimmed, no VCS
// stamp, the version set).
func TestReleaseBinaries(t *testing.T) {
	dir, version := release(t)
	for _, p := range platforms {
		t.Run(p.OS+"/"+p.Arch, func(t *testing.T) {
			bin := filepath.Join(dir, binaryName(p.OS, p.Arch))
			requireExecutableFor(t, bin, p.OS, p.Arch)
			info, err := buildinfo.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if info.Path != mainPackage || info.Main.Path != mainModule {
				t.Errorf("package %s of module %s, want %s of %s", info.Path, info.Main.Path, mainPackage, mainModule)
			}
			if info.GoVersion != runtime.Version() {
				t.Errorf("built by %s, want %s (the toolchain of this test)", info.GoVersion, runtime.Version())
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
				if strings.HasPrefix(s.Key, "vcs") {
					t.Errorf("VCS stamp %s=%s: want none (-buildvcs=false)", s.Key, s.Value)
				}
			}
			// (go does not record -ldflags with -trimpath.)
			want := map[string]string{
				"-trimpath":   "true",
				"CGO_ENABLED": "0",
				"GOOS":        p.OS,
				"GOARCH":      p.Arch,
				"GOAMD64":     map[string]string{"amd64": "v1"}[p.Arch],
				"GOARM64":     map[string]string{"arm64": "v8.0"}[p.Arch],
			}
			for k, v := range want {
				if settings[k] != v {
					t.Errorf("build setting %s=%q, want %q", k, settings[k], v)
				}
			}
			// The version set by -ldflags -X, read from the binary's data.
			if v, err := stringVar(bin, p.OS, versionVar); err != nil || v != version {
				t.Errorf("%s = %q (%v), want %q", versionVar, v, err, version)
			}
			found := false
			for _, d := range info.Deps {
				if d.Path == kappModule {
					found = d.Version == kappVersion
				}
			}
			if !found {
				t.Errorf("not built on %s %s", kappModule, kappVersion)
			}
		})
	}
}

// requireExecutableFor: bin is an executable of the platform.
func requireExecutableFor(t *testing.T, bin, goos, arch string) {
	t.Helper()
	switch goos {
	case "linux":
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		if f.Machine != want || f.Type != elf.ET_EXEC {
			t.Errorf("ELF %s %s, want an executable for %s", f.Type, f.Machine, want)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("dynamically linked (PT_INTERP): want a static binary")
			}
		}
	case "darwin":
		f, err := macho.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[arch]
		if f.Cpu != want || f.Type != macho.TypeExec {
			t.Errorf("Mach-O %s %s, want an executable for %s", f.Type, f.Cpu, want)
		}
	case "windows":
		f, err := pe.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			t.Errorf("PE machine %#x, want amd64", f.Machine)
		}
	default:
		t.Fatalf("unknown OS %s", goos)
	}
}

// stringVar reads the value of the Go string variable sym (its package
// path and name) from the data of an executable of goos: the string header
// (pointer, length) at the symbol's address, then the bytes it points to.
// 64-bit little-endian executables only, as all of the release's are.
func stringVar(bin, goos, sym string) (string, error) {
	var (
		addr uint64
		read func(addr, n uint64) ([]byte, error)
	)
	type section struct {
		addr, size uint64
		data       func() ([]byte, error)
	}
	readFrom := func(sections []section) func(addr, n uint64) ([]byte, error) {
		return func(a, n uint64) ([]byte, error) {
			for _, s := range sections {
				if a >= s.addr && a+n <= s.addr+s.size {
					data, err := s.data()
					if err != nil {
						return nil, err
					}
					if a-s.addr+n > uint64(len(data)) {
						return nil, fmt.Errorf("address %#x beyond the data of its section", a)
					}
					return data[a-s.addr : a-s.addr+n], nil
				}
			}
			return nil, fmt.Errorf("address %#x in no section", a)
		}
	}
	switch goos {
	case "linux":
		f, err := elf.Open(bin)
		if err != nil {
			return "", err
		}
		defer f.Close()
		syms, err := f.Symbols()
		if err != nil {
			return "", err
		}
		for _, s := range syms {
			if s.Name == sym {
				addr = s.Value
			}
		}
		var secs []section
		for _, s := range f.Sections {
			if s.Type != elf.SHT_NOBITS && s.Addr != 0 {
				secs = append(secs, section{s.Addr, s.Size, s.Data})
			}
		}
		read = readFrom(secs)
	case "darwin":
		f, err := macho.Open(bin)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if f.Symtab == nil {
			return "", fmt.Errorf("no symbol table")
		}
		for _, s := range f.Symtab.Syms {
			if s.Name == sym || s.Name == "_"+sym {
				addr = s.Value
			}
		}
		var secs []section
		for _, s := range f.Sections {
			if s.Offset != 0 {
				secs = append(secs, section{s.Addr, s.Size, s.Data})
			}
		}
		read = readFrom(secs)
	case "windows":
		f, err := pe.Open(bin)
		if err != nil {
			return "", err
		}
		defer f.Close()
		oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
		if !ok {
			return "", fmt.Errorf("not a 64-bit executable")
		}
		var secs []section
		for _, s := range f.Sections {
			secs = append(secs, section{oh.ImageBase + uint64(s.VirtualAddress), uint64(s.Size), s.Data})
		}
		for _, s := range f.Symbols {
			if s.Name == sym && s.SectionNumber > 0 && int(s.SectionNumber) <= len(f.Sections) {
				addr = secs[s.SectionNumber-1].addr + uint64(s.Value)
			}
		}
		read = readFrom(secs)
	default:
		return "", fmt.Errorf("unknown OS %s", goos)
	}
	if addr == 0 {
		return "", fmt.Errorf("no symbol %s", sym)
	}
	hdr, err := read(addr, 16)
	if err != nil {
		return "", err
	}
	ptr, n := binary.LittleEndian.Uint64(hdr[:8]), binary.LittleEndian.Uint64(hdr[8:])
	if n == 0 {
		return "", nil
	}
	data, err := read(ptr, n)
	return string(data), err
}

// runsHere: the binaries of goos/arch run on this machine.
func runsHere(goos, arch string) bool {
	return runtime.GOOS == goos && runtime.GOARCH == arch
}

// requireVersion runs `kapp version` and checks that it names the release.
func requireVersion(t *testing.T, bin, version string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	want := fmt.Sprintf("kapp version %s\ncrd-upgrade-safety version %s\n", kappVersion, version)
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("%s version printed\n%s\nwant it to start with\n%s", bin, out, want)
	}
}

// TestReleaseVersion: the linux/amd64 binary runs and names its version.
func TestReleaseVersion(t *testing.T) {
	dir, version := release(t)
	if !runsHere("linux", "amd64") {
		t.Skipf("the linux/amd64 binary does not run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	requireVersion(t, filepath.Join(dir, binaryName("linux", "amd64")), version)
}

// TestReleaseReproducible: the linux/amd64 binary built again by
// `hack/release.sh --rebuild`, from a copy of the source tree in another
// directory, in an environment that would change the bytes were the
// release build to take it (cgo on, another amd64 level, other GOFLAGS),
// has the same bytes. With RELEASE_REBUILD_GOCACHE set, that build cache
// (an empty directory: everything compiled again); else the usual one.
func TestReleaseReproducible(t *testing.T) {
	dir, version := release(t)
	src := filepath.Join(t.TempDir(), "elsewhere", "kapp")
	copySourceTree(t, src)
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(src, "hack", "release.sh"), "--rebuild", version, "linux/amd64", out)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOAMD64=v3", "GOFLAGS=-tags=netgo -buildvcs=true", "GOEXPERIMENT=")
	if c := os.Getenv("RELEASE_REBUILD_GOCACHE"); c != "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+c)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh --rebuild: %v\n%s", err, b)
	}
	name := binaryName("linux", "amd64")
	a, b := sha256File(t, filepath.Join(dir, name)), sha256File(t, filepath.Join(out, name))
	if a != b {
		t.Fatalf("the rebuilt %s differs: sha256 %s, the release's %s", name, b, a)
	}
	t.Logf("%s rebuilt in %s: sha256 %s, as released", name, src, a)
}

// copySourceTree copies the repository's files (tracked, and untracked
// but not ignored: the tree the release was built from) to dst.
func copySourceTree(t *testing.T, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(repoRoot, f)
		fi, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReleaseChecksums: checksums.txt holds, in sha256sum's format, the
// sum of every file of the release and of the image layout's index.json.
func TestReleaseChecksums(t *testing.T) {
	dir, _ := release(t)
	f, err := os.Open(filepath.Join(dir, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("checksums.txt: %q is not in sha256sum's format", sc.Text())
		}
		listed[m[2]] = true
		if got := sha256File(t, filepath.Join(dir, m[2])); got != m[1] {
			t.Errorf("%s: sha256 %s, checksums.txt says %s", m[2], got, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"image/index.json", "package-bundle/index.json", "package-repository/index.json"}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "checksums.txt" {
			want = append(want, e.Name())
		}
	}
	for _, w := range want {
		if !listed[w] {
			t.Errorf("%s is not in checksums.txt", w)
		}
	}
	if len(listed) != len(want) {
		t.Errorf("checksums.txt lists %d files, want %d: %v", len(listed), len(want), want)
	}
	for _, p := range platforms {
		if !listed[binaryName(p.OS, p.Arch)] {
			t.Errorf("no checksum of the %s/%s binary", p.OS, p.Arch)
		}
	}
}

// TestReleaseSBOMs: each binary's SBOM (CycloneDX) names the binary by its
// sha256 and the release's version, and lists every module in its build
// info and the Go standard library.
func TestReleaseSBOMs(t *testing.T) {
	dir, version := release(t)
	for _, p := range platforms {
		bin := binaryName(p.OS, p.Arch)
		t.Run(bin, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, bin+".sbom.json"))
			if err != nil {
				t.Fatal(err)
			}
			var bom struct {
				BOMFormat    string `json:"bomFormat"`
				SpecVersion  string `json:"specVersion"`
				SerialNumber string `json:"serialNumber"`
				Metadata     struct {
					Timestamp string `json:"timestamp"`
					Component struct {
						Name    string `json:"name"`
						Version string `json:"version"`
						PURL    string `json:"purl"`
					} `json:"component"`
					Properties []struct{ Name, Value string } `json:"properties"`
				} `json:"metadata"`
				Components []struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"components"`
			}
			if err := json.Unmarshal(data, &bom); err != nil {
				t.Fatal(err)
			}
			if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
				t.Errorf("bomFormat %q specVersion %q, want a CycloneDX document", bom.BOMFormat, bom.SpecVersion)
			}
			if bom.SerialNumber != "" || bom.Metadata.Timestamp != "" {
				t.Errorf("serial number %q, timestamp %q: want none (the SBOM is reproducible)", bom.SerialNumber, bom.Metadata.Timestamp)
			}
			c := bom.Metadata.Component
			if c.Name != mainModule || c.Version != version || !strings.Contains(c.PURL, "goos="+p.OS) || !strings.Contains(c.PURL, "goarch="+p.Arch) {
				t.Errorf("component %+v, want %s %s for %s/%s", c, mainModule, version, p.OS, p.Arch)
			}
			props := map[string]string{}
			for _, pr := range bom.Metadata.Properties {
				props[pr.Name] = pr.Value
			}
			if got, want := props["cdx:gomod:binary:hash:SHA-256"], sha256File(t, filepath.Join(dir, bin)); got != want {
				t.Errorf("binary sha256 %q, want %s", got, want)
			}
			have := map[string]bool{}
			for _, m := range bom.Components {
				have[m.Name+"@"+m.Version] = true
			}
			info, err := buildinfo.ReadFile(filepath.Join(dir, bin))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range info.Deps {
				if d.Replace != nil {
					d = d.Replace
				}
				if !have[d.Path+"@"+d.Version] {
					t.Errorf("module %s@%s of the binary is not in its SBOM", d.Path, d.Version)
				}
			}
			if !have["std@"+info.GoVersion] {
				t.Errorf("the standard library std@%s is not in the SBOM", info.GoVersion)
			}
			if !have[kappModule+"@"+kappVersion] {
				t.Errorf("%s@%s is not in the SBOM", kappModule, kappVersion)
			}
		})
	}
}

// files of an image's flattened file system by path, with their headers.
type fsEntry struct {
	Header *tar.Header
	Data   []byte
}

func flatten(t *testing.T, img v1.Image) map[string]fsEntry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]fsEntry{}
	readTar(t, rc, func(h *tar.Header, data []byte) {
		out["/"+strings.TrimSuffix(strings.TrimPrefix(h.Name, "/"), "/")] = fsEntry{h, data}
	})
	return out
}

// readTar calls each with every entry of the tar stream r, in order, and
// its content.
func readTar(t *testing.T, r io.Reader, each func(h *tar.Header, data []byte)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		each(h, data)
	}
}

// lookPath finds command on the PATH of env, in files, as the container
// runtime does for a Pod's command.
func lookPath(env []string, files map[string]fsEntry, command string) string {
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			for _, d := range strings.Split(p, ":") {
				f := path.Join(d, command)
				if e, ok := files[f]; ok && e.Header.Typeflag == tar.TypeReg && e.Header.Mode&0o111 != 0 {
					return f
				}
			}
		}
	}
	return ""
}

// runExtracted writes a binary taken out of an image to a file and checks
// its `version`.
func runExtracted(t *testing.T, data []byte, version string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kapp")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	requireVersion(t, bin, version)
}

// TestReleaseWebhookImage reads the image layout back: one image index,
// tagged with the version, of a linux/amd64 and a linux/arm64 image that run
// the release's binary as /kapp, as a non-root user, with the webhook's
// arguments and the CA certificates; the linux/amd64 binary taken out of it
// runs.
func TestReleaseWebhookImage(t *testing.T) {
	dir, version := release(t)
	top, err := layout.ImageIndexFromPath(filepath.Join(dir, "image"))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v, want one image index", tm.Manifests)
	}
	if ref := tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; ref != version {
		t.Errorf("tag %q, want %q", ref, version)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	if !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("platforms %v, want linux/amd64 and linux/arm64", got)
	}
	t.Run("crane push", func(t *testing.T) {
		// As README's "Install" pushes it: the image index, unchanged.
		desc := cranePush(t, filepath.Join(dir, "image"), testRegistry(t)+"/crdsafety/kapp:"+version)
		if desc.Digest != tm.Manifests[0].Digest || desc.MediaType != types.OCIImageIndex {
			t.Errorf("pushed %s %s, want the image index %s", desc.MediaType, desc.Digest, tm.Manifests[0].Digest)
		}
	})
	for _, d := range im.Manifests {
		p := d.Platform
		t.Run(p.OS+"/"+p.Architecture, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != p.OS || cfg.Architecture != p.Architecture {
				t.Errorf("config for %s/%s, want %s/%s", cfg.OS, cfg.Architecture, p.OS, p.Architecture)
			}
			c := cfg.Config
			uid, _, _ := strings.Cut(c.User, ":")
			if uid == "" || strings.Trim(uid, "0123456789") != "" || uid == "0" {
				t.Errorf("user %q, want a numeric non-root user (Kubernetes' runAsNonRoot checks it)", c.User)
			}
			if c.User != WebhookUser {
				t.Errorf("user %q, want %q", c.User, WebhookUser)
			}
			if !slices.Equal(c.Entrypoint, []string{"/kapp"}) || !slices.Equal(c.Cmd, []string{"tools", "crd-upgrade-safety-webhook"}) {
				t.Errorf("entrypoint %q cmd %q, want /kapp tools crd-upgrade-safety-webhook", c.Entrypoint, c.Cmd)
			}
			if c.Labels["org.opencontainers.image.version"] != version {
				t.Errorf("labels %v, want the version", c.Labels)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range layers {
				if mt, _ := l.MediaType(); mt != types.OCILayer {
					t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
				}
			}
			files := flatten(t, img)
			var names []string
			for n := range files {
				names = append(names, n)
			}
			slices.Sort(names)
			want := []string{"/etc", "/etc/group", "/etc/passwd", "/etc/ssl", "/etc/ssl/certs", "/etc/ssl/certs/ca-certificates.crt", "/kapp", "/tmp"}
			if !slices.Equal(names, want) {
				t.Errorf("files %v, want %v (an empty base)", names, want)
			}
			kapp := files["/kapp"]
			if kapp.Header.Mode&0o755 != 0o755 || kapp.Header.Uid != 0 {
				t.Errorf("/kapp mode %o owner %d, want 0755 owned by root", kapp.Header.Mode, kapp.Header.Uid)
			}
			sum := sha256.Sum256(kapp.Data)
			if got, want := hex.EncodeToString(sum[:]), sha256File(t, filepath.Join(dir, binaryName(p.OS, p.Architecture))); got != want {
				t.Errorf("/kapp sha256 %s, want the release's %s", got, want)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(files[CACertsPath].Data) {
				t.Errorf("%s holds no certificate", CACertsPath)
			}
			if !strings.Contains(string(files["/etc/passwd"].Data), ":"+WebhookUser+":") {
				t.Errorf("/etc/passwd has no entry for %s:\n%s", WebhookUser, files["/etc/passwd"].Data)
			}
			if files["/tmp"].Header.Mode&0o1777 != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", files["/tmp"].Header.Mode)
			}
			// examples/webhook/deployment.yaml runs `kapp` (command: [kapp]):
			// the runtime finds it on the image's PATH.
			if f := lookPath(c.Env, files, "kapp"); f != "/kapp" {
				t.Errorf("kapp on PATH (env %q): %q, want /kapp", c.Env, f)
			}
			if runsHere(p.OS, p.Architecture) {
				runExtracted(t, kapp.Data, version)
			}
		})
	}
}

// TestReleaseWebhookManifests: the release's install of the webhook
// names the release's image, and runs it as the image expects.
func TestReleaseWebhookManifests(t *testing.T) {
	dir, version := release(t)
	data, err := os.ReadFile(filepath.Join(dir, "crd-upgrade-safety-webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), ":VERSION") {
		t.Error("the image tag placeholder VERSION is left")
	}
	// Every document of examples/webhook is in it.
	examples, err := filepath.Glob(filepath.Join(repoRoot, "examples", "webhook", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantDocs := 0
	for _, e := range examples {
		wantDocs += len(yamlDocs(t, e))
	}
	docs := yamlDocs(t, filepath.Join(dir, "crd-upgrade-safety-webhook.yaml"))
	if len(docs) != wantDocs || wantDocs == 0 {
		t.Errorf("%d documents, want the %d of examples/webhook", len(docs), wantDocs)
	}
	var deployments, networkPolicies int
	for _, d := range docs {
		var obj struct {
			Kind string
			Spec struct {
				// A NetworkPolicy's.
				PodSelector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
				Ingress []struct {
					Ports []struct {
						Port string
					}
				}
				Template struct {
					Spec struct {
						SecurityContext struct {
							RunAsUser    int64 `yaml:"runAsUser"`
							RunAsNonRoot bool  `yaml:"runAsNonRoot"`
						} `yaml:"securityContext"`
						Containers []struct {
							Image   string
							Command []string
							Args    []string
						}
					}
				}
			}
		}
		if err := d.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind == "NetworkPolicy" {
			// Only the review port of the server's pods is admitted.
			networkPolicies++
			if obj.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != "crd-upgrade-safety-webhook" {
				t.Errorf("the NetworkPolicy selects %v, not the server's pods", obj.Spec.PodSelector.MatchLabels)
			}
			if len(obj.Spec.Ingress) != 1 || len(obj.Spec.Ingress[0].Ports) != 1 || obj.Spec.Ingress[0].Ports[0].Port != "https" {
				t.Errorf("the NetworkPolicy admits %+v, want the https port only", obj.Spec.Ingress)
			}
			continue
		}
		if obj.Kind != "Deployment" {
			continue
		}
		deployments++
		ps := obj.Spec.Template.Spec
		if want := strings.Split(WebhookUser, ":")[0]; fmt.Sprint(ps.SecurityContext.RunAsUser) != want || !ps.SecurityContext.RunAsNonRoot {
			t.Errorf("runAsUser %d, want the image's user %s, runAsNonRoot", ps.SecurityContext.RunAsUser, want)
		}
		if len(ps.Containers) != 1 {
			t.Fatalf("%d containers, want 1", len(ps.Containers))
		}
		c := ps.Containers[0]
		if want := "ghcr.io/crdsafety/kapp:" + version; c.Image != want {
			t.Errorf("image %q, want %q", c.Image, want)
		}
		// The image's entrypoint and arguments, or kapp on its PATH.
		args := append(slices.Clone(c.Command), c.Args...)
		if len(c.Command) == 0 {
			args = append([]string{"/kapp"}, c.Args...)
		}
		if len(args) < 3 || (args[0] != "kapp" && args[0] != "/kapp") || !slices.Equal(args[1:3], WebhookCmd) {
			t.Errorf("runs %q, want kapp %s ...", args, strings.Join(WebhookCmd, " "))
		}
	}
	if deployments != 1 {
		t.Errorf("%d Deployments, want 1", deployments)
	}
	if networkPolicies != 1 {
		t.Errorf("%d NetworkPolicies, want 1: only the apiserver may call the webhook (docs/webhook.md)", networkPolicies)
	}
}

func yamlDocs(t *testing.T, p string) []*yaml.Node {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(n.Content) > 0 && n.Content[0].Kind == yaml.MappingNode {
			out = append(out, &n)
		}
	}
}

// TestReleaseKappControllerLayer: each layer holds the release's binary as
// /kapp, mode 0755, owned by root, and nothing else; and the crane append
// command of docs/kapp-controller.md, run as written on a stand-in for
// kapp-controller's image in a registry on loopback, gives an image whose
// /kapp is this kapp and that is kapp-controller's otherwise.
func TestReleaseKappControllerLayer(t *testing.T) {
	dir, version := release(t)
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run("linux/"+arch, func(t *testing.T) {
			gz, err := os.ReadFile(filepath.Join(dir, "kapp-controller-layer-linux-"+arch+".tar.gz"))
			if err != nil {
				t.Fatal(err)
			}
			hdrs := readTarGz(t, gz)
			if len(hdrs) != 1 || hdrs[0].Name != BinaryPath[1:] || hdrs[0].Typeflag != tar.TypeReg ||
				hdrs[0].Mode != 0o755 || hdrs[0].Uid != 0 || hdrs[0].Gid != 0 {
				t.Fatalf("entries %+v, want only kapp, 0755, owned by 0:0", hdrs)
			}
		})
	}

	crane := buildCrane(t)
	host := testRegistry(t)
	base := host + "/carvel-dev/kapp-controller:v0.51.0"
	pushKappControllerStandIn(t, base)
	// run runs a script of docs/kapp-controller.md in the release
	// directory, crane on its PATH, the image to append to and the one to
	// push set.
	run := func(t *testing.T, script, image string) {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(crane)+":"+os.Getenv("PATH"),
			"KAPP_CONTROLLER_IMAGE="+base, "IMAGE="+image)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s\n%v\n%s", script, err, out)
		}
	}

	t.Run("crane append", func(t *testing.T) {
		image := host + "/kapp-controller:v0.51.0-crdsafety-" + version
		run(t, docCommand(t, "crane append "), image)
		ref, err := name.ParseReference(image)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref)
		if err != nil {
			t.Fatal(err)
		}
		requireAppended(t, img, dir, "amd64", version)
	})

	t.Run("both platforms", func(t *testing.T) {
		image := host + "/kapp-controller:v0.51.0-crdsafety-" + version + "-multi"
		run(t, docBlock(t, "crane index append "), image)
		ref, err := name.ParseReference(image)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref)
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range m.Manifests {
			if d.Platform == nil {
				t.Fatalf("manifest %s has no platform", d.Digest)
			}
			got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			requireAppended(t, img, dir, d.Platform.Architecture, version)
		}
		if !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
			t.Errorf("platforms %v, want linux/amd64 and linux/arm64", got)
		}
	})
}

// requireAppended: img is the stand-in kapp-controller image of arch with
// the release's kapp as /kapp.
func requireAppended(t *testing.T, img v1.Image, dir, arch, version string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != arch || cfg.Config.User != "1000" || !slices.Equal(cfg.Config.Entrypoint, []string{"/kapp-controller"}) {
		t.Errorf("config %s user %q entrypoint %q, want kapp-controller's for %s", cfg.Architecture, cfg.Config.User, cfg.Config.Entrypoint, arch)
	}
	files := flatten(t, img)
	if string(files["/kapp-controller"].Data) != "kapp-controller for "+arch {
		t.Errorf("%s: kapp-controller's own files are gone", arch)
	}
	kapp := files["/kapp"]
	sum := sha256.Sum256(kapp.Data)
	if got, want := hex.EncodeToString(sum[:]), sha256File(t, filepath.Join(dir, binaryName("linux", arch))); got != want {
		t.Fatalf("%s: /kapp sha256 %s, want the release's %s", arch, got, want)
	}
	if kapp.Header.Mode&0o755 != 0o755 {
		t.Errorf("%s: /kapp mode %o: user 1000 cannot run it", arch, kapp.Header.Mode)
	}
	// kapp-controller runs `kapp` from its PATH.
	if f := lookPath(cfg.Config.Env, files, "kapp"); f != "/kapp" {
		t.Errorf("%s: kapp on PATH (env %q): %q, want /kapp", arch, cfg.Config.Env, f)
	}
	if runsHere("linux", arch) {
		runExtracted(t, kapp.Data, version)
	}
}

// kappControllerDoc is docs/kapp-controller.md's lines.
func kappControllerDoc(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kapp-controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(doc), "\n")
}

// docCommand is the first command of docs/kapp-controller.md that starts
// a line with prefix, with its continuation lines.
func docCommand(t *testing.T, prefix string) string {
	t.Helper()
	lines := kappControllerDoc(t)
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		cmd := []string{l}
		for strings.HasSuffix(cmd[len(cmd)-1], "\\") && i+1 < len(lines) {
			i++
			cmd = append(cmd, lines[i])
		}
		return strings.Join(cmd, "\n")
	}
	t.Fatalf("docs/kapp-controller.md has no line that starts with %q", prefix)
	return ""
}

// docBlock is the code block of docs/kapp-controller.md that has a line
// starting with prefix.
func docBlock(t *testing.T, prefix string) string {
	t.Helper()
	var block []string
	in, found := false, false
	for _, l := range kappControllerDoc(t) {
		switch {
		case strings.HasPrefix(l, "```"):
			if in && found {
				return strings.Join(block, "\n")
			}
			in, block, found = !in, nil, false
		case in:
			block = append(block, l)
			found = found || strings.HasPrefix(l, prefix)
		}
	}
	t.Fatalf("docs/kapp-controller.md has no code block with a line that starts with %q", prefix)
	return ""
}

// craneDir holds crane, built once (buildCrane); TestMain removes it.
var craneDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if craneDir != "" {
		_ = os.RemoveAll(craneDir)
	}
	os.Exit(code)
}

// buildCrane builds crane (cmd/crane of the pinned go-containerregistry)
// once and returns its path.
func buildCrane(t *testing.T) string {
	t.Helper()
	if craneDir == "" {
		dir, err := os.MkdirTemp("", "crane")
		if err != nil {
			t.Fatal(err)
		}
		craneDir = dir
	}
	bin := filepath.Join(craneDir, "crane")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "build", "-mod=readonly", "-o", bin, "github.com/google/go-containerregistry/cmd/crane")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building crane: %v\n%s", err, out)
	}
	return bin
}

// testRegistry serves an in-memory registry for the test and returns its
// host.
func testRegistry(t *testing.T) string {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	return strings.TrimPrefix(reg.URL, "http://")
}

// cranePush pushes the OCI layout dir to ref with crane, as the docs do, and
// returns the descriptor the registry then serves at ref.
func cranePush(t *testing.T, dir, ref string) *remote.Descriptor {
	t.Helper()
	if out, err := exec.Command(buildCrane(t), "push", dir, ref).CombinedOutput(); err != nil {
		t.Fatalf("crane push %s: %v\n%s", ref, err, out)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	return desc
}

// pushKappControllerStandIn pushes to ref an image index shaped like
// kapp-controller v0.51.0's image (its Dockerfile): per platform, Docker
// media types, its tools in / (kapp-controller, an upstream kapp, ytt),
// / first on PATH, user 1000, entrypoint /kapp-controller.
func pushKappControllerStandIn(t *testing.T, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	var idx v1.ImageIndex = empty.Index
	idx = mutate.IndexMediaType(idx, types.DockerManifestList)
	for _, arch := range []string{"amd64", "arm64"} {
		gz, err := gzipTar([]file{
			{Name: "kapp", Mode: 0o755, Contents: []byte("upstream kapp")},
			{Name: "kapp-controller", Mode: 0o755, Contents: []byte("kapp-controller for " + arch)},
			{Name: "ytt", Mode: 0o755, Contents: []byte("ytt")},
		}, unixEpoch)
		if err != nil {
			t.Fatal(err)
		}
		l, err := layerOf(gz)
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: l, MediaType: types.DockerLayer})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", arch
		cfg.Config = v1.Config{
			User:       "1000",
			Env:        []string{"PATH=/:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Entrypoint: []string{"/kapp-controller"},
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.DockerManifestSchema2,
			Platform:  &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
}
