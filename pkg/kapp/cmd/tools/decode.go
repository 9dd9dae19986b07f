package tools

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
)

// Reading the inputs is most of the cost of the tools command, in time and
// memory: a document is kept once, as the bytes read (documents are
// slices of their file), converted to JSON by a streaming converter
// (internal/yamljson, the exact result of sigs.k8s.io/yaml) whose output is
// dropped once decoded, and identical documents (an old and a new release
// mostly ship the same CRDs) are decoded once: their CRDs are the same
// objects.

// readDocs reads sources (in order) and splits them into documents.
func readDocs(srcs []ctlres.FileSource) ([]rawDoc, error) {
	var docs []rawDoc
	for _, src := range srcs {
		data, err := src.Bytes()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", src.Description(), err)
		}
		split, err := splitDocs(data)
		if err != nil {
			return nil, fmt.Errorf("%s: splitting YAML documents: %w: %w", src.Description(), ErrInvalidInput, err)
		}
		file := newInputFile(src, data)
		for i, d := range split {
			docs = append(docs, rawDoc{origin: fmt.Sprintf("%s doc %d", src.Description(), i+1), data: d, src: docSource{file: file, doc: i}})
		}
	}
	return docs, nil
}

// splitDocs splits a file into YAML documents as kapp does
// (ctlres.YAMLFile.Docs, k8s.io/apimachinery's YAMLReader), without
// copying them: each document is a slice of data. Files with carriage
// returns or without a final line break, whose documents kapp rewrites,
// and separators kapp refuses are left to kapp's splitter.
func splitDocs(data []byte) ([][]byte, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' || bytes.IndexByte(data, '\r') >= 0 {
		return ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs()
	}
	var docs [][]byte
	start := -1 // start of the current document, -1 before its first line
	for pos := 0; pos < len(data); {
		end := pos + bytes.IndexByte(data[pos:], '\n') + 1
		line := data[pos:end]
		if bytes.HasPrefix(line, []byte("---")) {
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs() // its error
			}
			if start >= 0 {
				// A separator ends a document and belongs to none; one
				// before any line opens the next document.
				docs = append(docs, data[start:pos])
				start = -1
				pos = end
				continue
			}
		}
		if start < 0 {
			start = pos
		}
		pos = end
	}
	if start >= 0 {
		docs = append(docs, data[start:])
	}
	return docs, nil
}

// decodedDoc is what one document holds.
type decodedDoc struct {
	crds    []crdDoc
	configs []ctlres.Resource
	err     error
}

// decodeDocs decodes documents in parallel. Identical documents are
// decoded once: the later ones share the CRD objects of the first, with
// their own origins. Documents that failed or hold kapp Config are decoded
// again, for their own error and resources.
func decodeDocs(docs []rawDoc) []decodedDoc {
	results := make([]decodedDoc, len(docs))
	first := make([]int, len(docs)) // index of the first identical document
	byHash := map[uint64][]int{}
	seed := maphash.MakeSeed()
	var unique []int
	for i, d := range docs {
		first[i] = i
		h := maphash.Bytes(seed, d.data)
		for _, j := range byHash[h] {
			if bytes.Equal(docs[j].data, d.data) {
				first[i] = j
				break
			}
		}
		if first[i] == i {
			byHash[h] = append(byHash[h], i)
			unique = append(unique, i)
		}
	}
	decode := func(idx []int) {
		// Decoding errors are kept per document (reported in input order
		// by the caller), so the work itself never fails.
		_ = parallel.ForEach(context.Background(), len(idx), runtime.GOMAXPROCS(0), func(_ context.Context, k int) error {
			i := idx[k]
			r := &results[i]
			r.crds, r.configs, r.err = decodeDoc(docs[i])
			return nil
		})
	}
	decode(unique)

	var again []int
	for i := range docs {
		j := first[i]
		if j == i {
			continue
		}
		if r := results[j]; r.err != nil || len(r.configs) > 0 {
			again = append(again, i)
			continue
		}
		crds := make([]crdDoc, len(results[j].crds))
		for k, c := range results[j].crds {
			// "<doc origin>" or "<doc origin> item N" of the first document.
			crds[k] = crdDoc{crd: c.crd, origin: docs[i].origin + strings.TrimPrefix(c.origin, docs[j].origin), src: docs[i].src}
		}
		results[i].crds = crds
	}
	decode(again)
	for i := range results {
		for k := range results[i].crds {
			results[i].crds[k].src = docs[i].src // findings point at their own document
		}
	}
	return results
}
