package x

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

var errGone = errors.New("gone")

// Decisions by typed facts: sentinels, errors.As, a field error's Type
// and Field; an error's text only wrapped, printed, sorted for output,
// tested for presence.
func f(err error, errs field.ErrorList, log func(string)) (int, error) {
	if errors.Is(err, errGone) {
		return 0, fmt.Errorf("reading: %w", err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return 1, nil
	}
	byField := map[string]int{}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeRequired:
			byField[e.Field]++
		}
		if e.Detail != "" {
			log(fmt.Sprintf("%s: %v", e.Field, e))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	log(err.Error())
	return len(byField), nil
}
