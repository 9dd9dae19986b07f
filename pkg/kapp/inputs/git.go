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
	// ErrNoMergeBase: the --git-ref revision and HEAD share no history
	// (unrelated histories), so there is no merge base to compare with.
	ErrNoMergeBase = errors.New("no merge base")
	// ErrShallowClone: the clone is shallow and lacks the history that
	// holds the merge base of the --git-ref revision and HEAD.
	ErrShallowClone = errors.New("shallow clone")
)

// maxMovedCandidates bounds the files at the revision that are read when
// looking for moved CRDs: files that mention one of the missing names.
const maxMovedCandidates = 100

// shortCommit is how many hex digits of a commit name it where a merge
// base is the revision files were read at.
const shortCommit = 12

// Baseline is the commit the old CRDs of --git-ref were read at.
type Baseline struct {
	// Ref is the revision as given ("origin/main", "v1.2.0").
	Ref string
	// Commit is the full hash of the commit read: the merge base of Ref
	// and HEAD (the default), or Ref's own commit (tip).
	Commit string
	// MergeBase: Commit is the merge base of Ref and HEAD and not Ref's
	// own commit (Ref moved on after HEAD branched off it).
	MergeBase bool
}

// Rev is the git revision the files were read at, as positions and
// origins name it: Ref, or the abbreviated commit for a merge base or a
// Ref that is the full commit hash (a pull request's base commit).
func (b Baseline) Rev() string {
	if b.MergeBase || b.Ref == b.Commit {
		return b.Commit[:min(shortCommit, len(b.Commit))]
	}
	return b.Ref
}

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

// LoadGitRef reads the old CRDs for one --git-ref: every CRD in the files
// at paths (the --file2 values, all in one repository) as they are at the
// merge base of rev and HEAD (what a pull request changes), or, with tip,
// at rev itself; and for each CRD of newSet that those do not hold, its
// document found elsewhere in the tree there (a file moved or renamed);
// notef is told of each such move. A path that did not exist there holds
// nothing: its CRDs are new. It returns the baseline read with the set.
// Errors are named "old CRDs at <rev>: ".
func LoadGitRef(rev string, tip bool, paths []string, newSet Set, notef func(format string, args ...any)) (Set, Baseline, error) {
	set, b, err := loadGitInputs(rev, tip, paths, newSet, notef)
	if err != nil {
		return Set{}, Baseline{}, fmt.Errorf("old CRDs at %s: %w", rev, err)
	}
	return set, b, nil
}

// loadGitInputs is LoadGitRef without the name of its errors.
func loadGitInputs(rev string, tip bool, paths []string, newSet Set, notef func(string, ...any)) (Set, Baseline, error) {
	repo, rels, err := gitPaths(paths, "--git-ref")
	if err != nil {
		return Set{}, Baseline{}, err
	}
	b, err := repo.baseline(rev, tip)
	if err != nil {
		return Set{}, Baseline{}, err
	}
	c, label := b.Commit, b.Rev()

	var files []string
	for i, rel := range rels {
		fs, err := repo.filesAt(c, rel.path, rel.isDir)
		if err != nil {
			return Set{}, Baseline{}, fmt.Errorf("listing %s at %s: %w", paths[i], label, err)
		}
		files = append(files, fs...)
	}
	srcs, err := repo.sources(c+":", label, files)
	if err != nil {
		return Set{}, Baseline{}, err
	}
	set, err := loadSources(srcs, "old")
	if err != nil {
		return Set{}, Baseline{}, err
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
	moved, err := repo.findMoved(c, label, missing, files, notef)
	if err != nil {
		return Set{}, Baseline{}, err
	}
	set.CRDs = append(set.CRDs, moved...)
	return set, b, nil
}

// LoadGitStaged reads the new CRDs for --git-staged: the files at paths
// (--file2 values, all in one repository) as they are staged in git's
// index, which a commit being made will hold (a pre-commit hook), not as
// they are on disk. A file or directory with nothing staged holds
// nothing. Errors are named "new CRDs staged: ".
func LoadGitStaged(paths []string) (Set, error) {
	set, err := loadStaged(paths)
	if err != nil {
		return Set{}, fmt.Errorf("new CRDs staged: %w", err)
	}
	return set, nil
}

func loadStaged(paths []string) (Set, error) {
	repo, rels, err := gitPaths(paths, "--git-staged")
	if err != nil {
		return Set{}, err
	}
	var files []string
	for i, rel := range rels {
		out, err := repo.git(nil, "ls-files", "--stage", "-z", "--", rel.path)
		if err != nil {
			return Set{}, fmt.Errorf("listing %s in the index: %w", paths[i], err)
		}
		files = append(files, treeFiles(out, rel, stagedFile)...)
	}
	srcs, err := repo.sources(":", "", files)
	if err != nil {
		return Set{}, err
	}
	return loadSources(srcs, "new")
}

// baseline resolves rev to the commit to read: the merge base of rev and
// HEAD, or with tip rev's own commit.
func (g gitRepo) baseline(rev string, tip bool) (Baseline, error) {
	commit, err := g.git(nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil || strings.HasPrefix(rev, "-") {
		return Baseline{}, fmt.Errorf("%w %q in %s (a shallow clone may lack it: fetch it, e.g. actions/checkout with fetch-depth: 0)",
			ErrUnknownRevision, rev, g.top)
	}
	b := Baseline{Ref: rev, Commit: strings.TrimSpace(string(commit))}
	if tip {
		return b, nil
	}
	head, err := g.git(nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return Baseline{}, fmt.Errorf("%w HEAD in %s: the merge base with %s needs a commit checked out (or compare with the tip of %s: --git-ref-tip)",
			ErrUnknownRevision, g.top, rev, rev)
	}
	out, err := g.git(nil, "merge-base", b.Commit, strings.TrimSpace(string(head)))
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && len(bytes.TrimSpace(out)) == 0 {
		shallow, _ := g.git(nil, "rev-parse", "--is-shallow-repository")
		if strings.TrimSpace(string(shallow)) == "true" {
			return Baseline{}, fmt.Errorf("%w: %s and HEAD have no merge base in the history this clone has: "+
				"fetch the whole history (actions/checkout with fetch-depth: 0, or git fetch --unshallow), or compare with the tip of %s (--git-ref-tip)",
				ErrShallowClone, rev, rev)
		}
		return Baseline{}, fmt.Errorf("%w: %s and HEAD share no history (unrelated histories); compare with the tip of %s (--git-ref-tip)",
			ErrNoMergeBase, rev, rev)
	}
	if err != nil {
		return Baseline{}, fmt.Errorf("the merge base of %s and HEAD: %w", rev, err)
	}
	mb := strings.TrimSpace(string(out))
	b.MergeBase = mb != b.Commit
	b.Commit = mb
	return b, nil
}

// repoPath is a --file2 path relative to the repository's top directory.
type repoPath struct {
	path  string // slash-separated; "." for the top directory
	isDir bool
}

// gitPaths finds the repository that holds every path and their paths in
// it; flag names the flag that reads them with git, in errors.
func gitPaths(paths []string, flag string) (gitRepo, []repoPath, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return gitRepo{}, nil, fmt.Errorf("%s reads the CRDs with git: %w", flag, err)
	}
	var repo gitRepo
	rels := make([]repoPath, len(paths))
	for i, p := range paths {
		if p == "-" || strings.Contains(p, "://") {
			return gitRepo{}, nil, fmt.Errorf("%s reads the --file2 paths with git: %q is not a path in a git work tree", flag, p)
		}
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("%s: %w", flag, err)
		}
		info, err := os.Stat(abs)
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("%s: %w", flag, err)
		}
		dir := abs
		if !info.IsDir() {
			dir = filepath.Dir(abs)
		}
		out, err := runGit(dir, nil, "rev-parse", "--show-toplevel")
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("%s: %s is %w (%w)", flag, p, ErrNotInGitRepository, err)
		}
		top, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("%s: %w", flag, err)
		}
		if repo.top != "" && repo.top != top {
			return gitRepo{}, nil, fmt.Errorf("%s: the --file2 paths are in different git repositories (%s and %s)", flag, repo.top, top)
		}
		repo.top = top
		rel, err := filepath.Rel(top, abs)
		if err != nil {
			return gitRepo{}, nil, fmt.Errorf("%s: %w", flag, err)
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
	return treeFiles(out, repoPath{path: path, isDir: isDir}, treeBlob), nil
}

// treeFiles picks the files that p names from the NUL-separated entries
// of git ls-tree or git ls-files --stage (the fields before the tab, then
// the name) for which keep holds, as fileSources does on disk: the file
// itself, or the .json, .yaml and .yml files below a directory, sorted.
func treeFiles(out []byte, p repoPath, keep func(fields []string) bool) []string {
	var files []string
	for _, entry := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(entry, "\t")
		if !ok || !keep(strings.Fields(meta)) {
			continue
		}
		switch {
		case !p.isDir && name == p.path:
		case p.isDir && (p.path == "." || strings.HasPrefix(name, p.path+"/")) && hasInputExt(name):
		default:
			continue
		}
		files = append(files, name)
	}
	sort.Strings(files)
	return files
}

// treeBlob keeps the regular files of git ls-tree ("<mode> <type>
// <object>"): not symlinks, not submodules.
func treeBlob(f []string) bool { return len(f) == 3 && f[1] == "blob" && f[0] != "120000" }

// stagedFile keeps the regular files of git ls-files --stage ("<mode>
// <object> <stage>") staged for the next commit (stage 0: not a merge
// conflict's sides): not symlinks, not submodules.
func stagedFile(f []string) bool {
	return len(f) == 3 && f[2] == "0" && f[0] != "120000" && f[0] != "160000"
}

// sources reads files (one git process for all of them): at a commit
// (prefix "<commit>:", rev the revision as positions name it), or as
// staged in the index (prefix ":", rev "").
func (g gitRepo) sources(prefix, rev string, files []string) ([]ctlres.FileSource, error) {
	var in bytes.Buffer
	var names []string
	for _, f := range files {
		if strings.ContainsAny(f, "\n\r") {
			continue // cannot be named on cat-file's input
		}
		fmt.Fprintf(&in, "%s%s\n", prefix, f)
		names = append(names, f)
	}
	if len(names) == 0 {
		return nil, nil
	}
	at := "staged"
	if rev != "" {
		at = "at " + rev
	}
	out, err := g.git(&in, "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("reading files %s: %w", at, err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	srcs := make([]ctlres.FileSource, 0, len(names))
	for _, name := range names {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", name, at, err)
		}
		// "<object> blob <size>", or "<name> missing".
		fields := strings.Fields(header)
		if len(fields) != 3 || fields[1] != "blob" {
			return nil, fmt.Errorf("reading %s %s: git cat-file: %s", name, at, strings.TrimSpace(header))
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("reading %s %s: git cat-file: %s", name, at, strings.TrimSpace(header))
		}
		data := make([]byte, size+1) // the content and a newline
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", name, at, err)
		}
		srcs = append(srcs, pathSource{
			FileSource: gitFileSource{desc: fmt.Sprintf("file '%s' %s", name, at), data: data[:size]},
			path:       filepath.Join(g.top, filepath.FromSlash(name)),
			rev:        rev,
			staged:     rev == "",
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
		srcs, err := g.sources(commit+":", rev, []string{name})
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
