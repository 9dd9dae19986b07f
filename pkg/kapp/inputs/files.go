package inputs

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
)

// This file holds where documents come from: the --file values expanded
// as kapp expands them (files, directories, URLs, "-" for standard input),
// read and split into YAML documents.
//
// Reading the inputs is most of the cost of the tools command, in time and
// memory: a document is kept once, as the bytes read (documents are
// slices of their file), converted to JSON by a streaming converter
// (internal/yamljson, the exact result of sigs.k8s.io/yaml) whose output is
// dropped once decoded, and identical documents (an old and a new release
// mostly ship the same CRDs) are decoded once: their CRDs are the same
// objects (decode.go).

var fileExts = []string{".json", ".yaml", ".yml"} // as kapp and kubectl

// rawDoc is one document as read, not yet decoded.
type rawDoc struct {
	origin string
	data   []byte
	src    docSource
}

// docBytes is the size of docs.
func docBytes(docs []rawDoc) int {
	n := 0
	for _, d := range docs {
		n += len(d.data)
	}
	return n
}

// readFiles reads files (in order) and splits them into documents.
func readFiles(files []string) ([]rawDoc, error) {
	var srcs []ctlres.FileSource
	for _, file := range files {
		s, err := fileSources(file)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s...)
	}
	return readDocs(srcs)
}

// fileSources expands one --file/--file2 value like kapp does: "-" is
// stdin, http(s) URLs are fetched, directories are walked recursively for
// .json/.yaml/.yml files in sorted order. Paths keep their directory so
// errors name the real file.
func fileSources(file string) ([]ctlres.FileSource, error) {
	switch {
	case file == "-":
		return []ctlres.FileSource{ctlres.NewStdinSource()}, nil
	case strings.HasPrefix(file, "http://") || strings.HasPrefix(file, "https://"):
		return []ctlres.FileSource{pathSource{FileSource: ctlres.NewHTTPFileSource(file), path: file}}, nil
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("reading file '%s': %w", file, err)
	}
	if !info.IsDir() {
		return []ctlres.FileSource{localSource(file)}, nil
	}
	var paths []string
	err = filepath.WalkDir(file, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, ext := range fileExts {
			if filepath.Ext(path) == ext {
				paths = append(paths, path)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing directory '%s': %w", file, err)
	}
	sort.Strings(paths)
	srcs := make([]ctlres.FileSource, len(paths))
	for i, p := range paths {
		srcs[i] = localSource(p)
	}
	return srcs, nil
}

func localSource(path string) pathSource {
	return pathSource{FileSource: ctlres.NewLocalFileSource(nil, path), path: path}
}

func hasInputExt(name string) bool {
	for _, ext := range fileExts {
		if filepath.Ext(name) == ext {
			return true
		}
	}
	return false
}

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
