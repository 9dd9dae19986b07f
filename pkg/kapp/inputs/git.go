package inputs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
)

// This file holds the inputs of --git-ref: the old CRDs are the --file2
// paths as they are at a git revision of the repository that holds them,
// read with the git CLI (no checkout, nothing written). CRDs of the new
// inputs that those paths did not hold at the revision (their file moved or
// was renamed) are looked for in the whole tree at the revision, by name.

var (
	// ErrNotInGitRepository: a --file2 path is not in a git work tree.
	ErrNotInGitRepository = errors.New("not in a git repository")
	// ErrUnknownRevision: --git-ref names no commit of the repository.
	ErrUnknownRevision = errors.New("unknown git revision")
)

// maxMovedCandidates bounds the files at the revision that are read when
// looking for moved CRDs: files that mention one of the missing names.
const maxMovedCandidates = 100

// gitRepo runs git in a repository's top directory.
type gitRepo struct {
	top string
}

func (g gitRepo) git(stdin io.Reader, args ...string) ([]byte, error) {
	return runGit(g.top, stdin, args...)
}

func runGit(dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
		}
		return out, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out, nil
}

// LoadGitRef reads the old CRDs for --git-ref: every CRD in the files at
// paths (the --file2 values, all in one repository) as they are at rev,
// and for each CRD of newSet that those do not hold, its document found
// elsewhere in the tree at rev (a file moved or renamed); notef is told of
// each such move. A path that did not exist at rev holds nothing: its CRDs
// are new. Errors are named "old CRDs at <rev>: ".
func LoadGitRef(rev string, paths []string, newSet Set, notef func(format string, args ...any)) (Set, error) {
	set, err := loadGitInputs(rev, paths, newSet, notef)
	if err != nil {
		return Set{}, fmt.Errorf("old CRDs at %s: %w", rev, err)
	}
	return set, nil
}

// loadGitInputs is LoadGitRef without the name of its errors.
func loadGitInputs(rev string, paths []string, newSet Set, notef func(string, ...any)) (Set, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return Set{}, fmt.Errorf("--git-ref reads the old CRDs with git: %w", err)
	}
	repo, rels, err := repoPaths(paths)
	if err != nil {
		return Set{}, err
	}
	commit, err := repo.git(nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil || strings.HasPrefix(rev, "-") {
		return Set{}, fmt.Errorf("%w %q in %s (a shallow clone may lack it: fetch it, e.g. actions/checkout with fetch-depth: 0)",
			ErrUnknownRevision, rev, repo.top)
	}
	c := strings.TrimSpace(string(commit))

	var files []string
	for i, rel := range rels {
		fs, err := repo.filesAt(c, rel.path, rel.isDir)
		if err != nil {
			return Set{}, fmt.Errorf("listing %s at %s: %w", paths[i], rev, err)
		}
		files = append(files, fs...)
	}
	srcs, err := repo.sources(c, rev, files)
	if err != nil {
		return Set{}, err
	}
	set, err := loadSources(srcs, "old")
	if err != nil {
		return Set{}, err
	}

	have := map[string]bool{}
	for _, crd := range set.CRDs {
		have[crd.CRD.Name] = true
	}
	var missing []string
	for _, crd := range newSet.CRDs {
		if !have[crd.CRD.Name] {
			missing = append(missing, crd.CRD.Name)
		}
	}
	moved, err := repo.findMoved(c, rev, missing, files, notef)
	if err != nil {
		return Set{}, err
	}
	set.CRDs = append(set.CRDs, moved...)
	return set, nil
}

// repoPath is a --file2 path relative to the repository's top directory.
type repoPath struct {
	path  string // slash-separated; "." for the top directory
	isDir bool
}

// repoPaths finds the repository that holds every path and their paths in it.
func repoPaths(paths []string) (gitRepo, []repoPath, error) {
	var repo gitRepo
	rels := make([]repoPath, len(paths))
	for i, p := range paths {
		if p == "-" || strings.Contains(p, "://") {
			return gitRepo{}, nil, fmt.Errorf("--git-ref reads the --file2 paths at a git revision: %q is not a path in a git work tree", p)
		}
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("--git-ref: %w", err)
		}
		info, err := os.Stat(abs)
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("--git-ref: %w", err)
		}
		dir := abs
		if !info.IsDir() {
			dir = filepath.Dir(abs)
		}
		out, err := runGit(dir, nil, "rev-parse", "--show-toplevel")
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("--git-ref: %s is %w (%w)", p, ErrNotInGitRepository, err)
		}
		top, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("--git-ref: %w", err)
		}
		if repo.top != "" && repo.top != top {
			return gitRepo{}, nil, fmt.Errorf("--git-ref: the --file2 paths are in different git repositories (%s and %s)", repo.top, top)
		}
		repo.top = top
		rel, err := filepath.Rel(top, abs)
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("--git-ref: %w", err)
		}
		rels[i] = repoPath{path: filepath.ToSlash(rel), isDir: info.IsDir()}
	}
	return repo, rels, nil
}

// filesAt lists the files at commit that a --file2 path names, as
// fileSources does on disk: the file itself, or the .json, .yaml and .yml
// files below a directory, sorted. Nothing when the path did not exist.
func (g gitRepo) filesAt(commit, path string, isDir bool) ([]string, error) {
	out, err := g.git(nil, "ls-tree", "-r", "-z", "--full-tree", commit, "--", path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, entry := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(entry, "\t")
		fields := strings.Fields(meta)
		// <mode> <type> <object>: regular files only (not symlinks, not submodules).
		if !ok || len(fields) != 3 || fields[1] != "blob" || fields[0] == "120000" {
			continue
		}
		switch {
		case !isDir && name == path:
		case isDir && (path == "." || strings.HasPrefix(name, path+"/")) && hasInputExt(name):
		default:
			continue
		}
		files = append(files, name)
	}
	sort.Strings(files)
	return files, nil
}

// sources reads files at commit (one git process for all of them).
func (g gitRepo) sources(commit, rev string, files []string) ([]ctlres.FileSource, error) {
	var in bytes.Buffer
	var names []string
	for _, f := range files {
		if strings.ContainsAny(f, "\n\r") {
			continue // cannot be named on cat-file's input
		}
		fmt.Fprintf(&in, "%s:%s\n", commit, f)
		names = append(names, f)
	}
	if len(names) == 0 {
		return nil, nil
	}
	out, err := g.git(&in, "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("reading files at %s: %w", rev, err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	srcs := make([]ctlres.FileSource, 0, len(names))
	for _, name := range names {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading %s at %s: %w", name, rev, err)
		}
		// "<object> blob <size>", or "<name> missing".
		fields := strings.Fields(header)
		if len(fields) != 3 || fields[1] != "blob" {
			return nil, fmt.Errorf("reading %s at %s: git cat-file: %s", name, rev, strings.TrimSpace(header))
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("reading %s at %s: git cat-file: %s", name, rev, strings.TrimSpace(header))
		}
		data := make([]byte, size+1) // the content and a newline
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("reading %s at %s: %w", name, rev, err)
		}
		srcs = append(srcs, pathSource{
			FileSource: gitFileSource{desc: fmt.Sprintf("file '%s' at %s", name, rev), data: data[:size]},
			path:       filepath.Join(g.top, filepath.FromSlash(name)),
			rev:        rev,
		})
	}
	return srcs, nil
}

// findMoved looks for the CRDs named missing in the whole tree at commit,
// except in the files already read: the YAML and JSON files that mention
// one of the names (git grep, at most maxMovedCandidates of them, in path
// order), decoded one by one. A file that does not decode is skipped (it
// was found by a search, not named by the user); the first document of a
// name wins.
func (g gitRepo) findMoved(commit, rev string, missing, read []string, notef func(string, ...any)) ([]CRD, error) {
	if len(missing) == 0 {
		return nil, nil
	}
	args := []string{"grep", "-l", "-z", "-F", "-I", "--no-color"}
	for _, name := range missing {
		args = append(args, "-e", name)
	}
	args = append(args, commit, "--")
	for _, ext := range fileExts {
		args = append(args, "*"+ext)
	}
	out, err := g.git(nil, args...)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && len(out) == 0 {
		return nil, nil // no match
	}
	if err != nil {
		return nil, fmt.Errorf("looking for moved CRDs at %s: %w", rev, err)
	}
	skip := map[string]bool{}
	for _, f := range read {
		skip[f] = true
	}
	var candidates []string
	for _, hit := range strings.Split(string(out), "\x00") {
		name := strings.TrimPrefix(hit, commit+":")
		if hit != "" && !skip[name] {
			candidates = append(candidates, name)
		}
	}
	sort.Strings(candidates)
	if len(candidates) > maxMovedCandidates {
		notef("looking for moved CRDs at %s: %d files mention their names, read the first %d", rev, len(candidates), maxMovedCandidates)
		candidates = candidates[:maxMovedCandidates]
	}

	want := map[string]bool{}
	for _, name := range missing {
		want[name] = true
	}
	var found []CRD
	for _, name := range candidates {
		srcs, err := g.sources(commit, rev, []string{name})
		if err != nil {
			return nil, err
		}
		set, err := loadSources(srcs, "old")
		if err != nil {
			continue
		}
		for _, c := range set.CRDs {
			if want[c.CRD.Name] {
				delete(want, c.CRD.Name)
				found = append(found, c)
				notef("old CRD %s: not in the --file2 paths at %s, read from %s there (moved)", c.CRD.Name, rev, name)
			}
		}
	}
	return found, nil
}

// gitFileSource is a file read at a git revision.
type gitFileSource struct {
	desc string
	data []byte
}

func (s gitFileSource) Description() string    { return s.desc }
func (s gitFileSource) Bytes() ([]byte, error) { return s.data, nil }
