// Package inputs loads the CRDs that the tools commands (`kapp tools
// crd-upgrade-safety`, `kapp tools crd-migrate-storage`) read from files:
// YAML or JSON files, directories, URLs or standard input, as `kapp deploy
// -f` takes them (files.go); the documents decoded into typed CRDs and kapp
// Config resources (decode.go); the same paths read at a git revision, for
// --git-ref (git.go: at the merge base of the revision and HEAD, or at its
// tip), or as staged in git's index, for --git-staged; and the file and
// line of a field of a CRD, for findings (positions.go).
//
// The API:
//
//   - Load reads one side (a list of --file values) into a Set; LoadPair
//     reads an old and a new side, decoding their documents together, and
//     LoadGitRef reads the old side at a git revision (returning the
//     Baseline it read), LoadGitStaged the new side as staged.
//   - A Set holds CRDs (each with its origin) and kapp Config resources.
//   - A Locator gives the Position (file, line, git revision) of a Target:
//     what a finding is about.
//   - Every error about the documents themselves wraps ErrInvalidInput;
//     --git-ref errors wrap ErrNotInGitRepository, ErrUnknownRevision,
//     ErrNoMergeBase or ErrShallowClone.
//
// The package knows nothing of the checks, the cluster or the commands'
// flags beyond the file values they pass.
package inputs

import (
	"errors"
	"fmt"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// This file holds the package's entry points for files on disk (Load,
// LoadPair), what they return (Set, CRD) and ErrInvalidInput.

// ErrInvalidInput is wrapped by every error about the input documents
// (not YAML, undecodable or invalid CRD, duplicate CRD name).
var ErrInvalidInput = errors.New("invalid input")

// CRD is one CRD of the inputs with where it came from.
type CRD struct {
	CRD *apiextv1.CustomResourceDefinition
	// Origin names the document in errors and notes: "file 'crds/a.yaml'
	// doc 2", "... doc 1 item 3" for an item of a List.
	Origin string
	src    docSource // for the file and line of findings (Locator)
}

// Set is what a set of inputs holds: CRDs (in input order) and kapp Config
// resources (documents of kapp's config apiVersion or ConfigMaps labeled as
// kapp config).
type Set struct {
	CRDs    []CRD
	Configs []ctlres.Resource
}

// Load reads files (in order) and decodes their documents. Duplicate CRD
// names are errors; which ("old", "new", "input") names the side in the
// error. Whether the apiserver would accept the CRDs is the
// apiserverRejects check's question, not an input error.
func Load(files []string, which string) (Set, error) {
	docs, err := readFiles(files)
	if err != nil {
		return Set{}, err
	}
	return assembleInputs(decodeDocs(docs), which)
}

// LoadPair reads the old and the new files. Their documents are decoded
// together, in parallel (decoding dominates the cost of the tools
// command): a document found on both sides, an unchanged CRD, is decoded
// once and its CRD is the same object on both sides. read, when not nil,
// is called with the size in bytes of all the documents once they are
// read, before they are decoded. Errors name their side ("old CRDs: ",
// "new CRDs: "); those about the old inputs come first.
func LoadPair(oldFiles, newFiles []string, read func(bytes int)) (oldSet, newSet Set, err error) {
	oldDocs, err := readFiles(oldFiles)
	if err != nil {
		return Set{}, Set{}, fmt.Errorf("old CRDs: %w", err)
	}
	newDocs, newErr := readFiles(newFiles)
	docs := append(oldDocs[:len(oldDocs):len(oldDocs)], newDocs...)
	if read != nil {
		read(docBytes(docs))
	}
	results := decodeDocs(docs)
	if oldSet, err = assembleInputs(results[:len(oldDocs)], "old"); err != nil {
		return Set{}, Set{}, fmt.Errorf("old CRDs: %w", err)
	}
	if newErr == nil {
		newSet, newErr = assembleInputs(results[len(oldDocs):], "new")
	}
	if newErr != nil {
		return Set{}, Set{}, fmt.Errorf("new CRDs: %w", newErr)
	}
	return oldSet, newSet, nil
}

// loadSources is Load of sources already listed.
func loadSources(srcs []ctlres.FileSource, which string) (Set, error) {
	docs, err := readDocs(srcs)
	if err != nil {
		return Set{}, err
	}
	return assembleInputs(decodeDocs(docs), which)
}

// assembleInputs collects the decoded documents of one side, in input
// order: the first decoding error, or the set; a duplicate CRD name is an
// error naming both documents.
func assembleInputs(results []decodedDoc, which string) (Set, error) {
	var set Set
	seen := map[string]string{}
	for _, r := range results {
		if r.err != nil {
			return Set{}, r.err
		}
		for _, c := range r.crds {
			if prev, dup := seen[c.CRD.Name]; dup {
				return Set{}, fmt.Errorf("%w: duplicate CustomResourceDefinition %s in %s files: %s and %s",
					ErrInvalidInput, c.CRD.Name, which, prev, c.Origin)
			}
			seen[c.CRD.Name] = c.Origin
			set.CRDs = append(set.CRDs, c)
		}
		set.Configs = append(set.Configs, r.configs...)
	}
	return set, nil
}
