package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The Helm chart of the webhook (charts/crd-upgrade-safety-webhook),
// packaged as `helm package` does: a gzipped tarball of the chart's
// directory under its name, named NAME-VERSION.tgz, with the release's
// version as the chart's version and appVersion and the release's image
// as the image value.

var (
	chartVersionLine    = regexp.MustCompile(`(?m)^version: .*$`)
	chartAppVersionLine = regexp.MustCompile(`(?m)^appVersion: .*$`)
	chartImageLine      = regexp.MustCompile(`(?m)^image: ""$`)
)

// chartArchive returns the chart archive of the chart in dir (its name is
// the directory's), for the release version and image.
func chartArchive(dir, version, image string, mtime time.Time) (name string, gz []byte, err error) {
	chart := filepath.Base(dir)
	v := strings.TrimPrefix(version, "v")
	var paths []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("reading the chart: %w", err)
	}
	sort.Strings(paths)
	var files []file
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", nil, err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return "", nil, err
		}
		rel = filepath.ToSlash(rel)
		switch rel {
		case "Chart.yaml":
			if !chartVersionLine.Match(data) || !chartAppVersionLine.Match(data) {
				return "", nil, fmt.Errorf("%s/Chart.yaml: no version or appVersion line to set", dir)
			}
			data = chartVersionLine.ReplaceAll(data, []byte("version: "+v))
			data = chartAppVersionLine.ReplaceAll(data, []byte("appVersion: "+v))
		case "values.yaml":
			if !chartImageLine.Match(data) {
				return "", nil, fmt.Errorf(`%s/values.yaml: no line 'image: ""' to set`, dir)
			}
			data = chartImageLine.ReplaceAll(data, []byte("image: "+image))
		}
		files = append(files, file{Name: chart + "/" + rel, Mode: 0o644, Contents: data})
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("%s: an empty chart", dir)
	}
	gz, err = gzipTar(files, mtime)
	return chart + "-" + v + ".tgz", gz, err
}
