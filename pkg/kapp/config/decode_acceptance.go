package config

import (
	"strings"
)

// acceptances decodes the acceptDataLoss list into p. Every entry names
// the loss (crd, check, and where the loss has them version and path),
// how many objects at most (objects), why (reason) and until when
// (expires): all but version, path and owner are required.
func acceptances(p *[]Acceptance) fieldFunc {
	return func(d *decoder, l loc, v any) {
		d.list(l, v, func(d *decoder, l loc, v any) {
			m, ok := asMap(v)
			if !ok {
				d.fail(l, ErrInvalidType, "must be a map, got %s", typeName(v))
				return
			}
			var a Acceptance
			before := len(d.errs)
			d.object(l, m, fields{
				"crd":     str(&a.CRD),
				"check":   leaf(parseWaivableCheck, func(s string) { a.Check = s }),
				"version": str(&a.Version),
				"path":    schemaPath(&a.Path, "^.spec.color, and names one field exactly"),
				"objects": nonNegativeInt(&a.Objects),
				"reason":  str(&a.Reason),
				"owner":   str(&a.Owner),
				"expires": date(&a.Expires),
			})
			required := []struct{ key, why string }{
				{"crd", "the CRD whose data is lost, its metadata.name (widgets.example.com)"},
				{"check", "the check ID of the loss, as outputs print it (existingFieldRemoval, crdDeletion, ...)"},
				{"objects", "the most objects the loss may affect, as the run counts them (0 or more)"},
				{"reason", "say why losing this data is acceptable"},
				{"expires", "the last day the acceptance applies, YYYY-MM-DD (UTC): an accepted loss is a decision for one change, not a standing license"},
			}
			for _, r := range required {
				s, isStr := m[r.key].(string)
				if m[r.key] == nil || isStr && strings.TrimSpace(s) == "" {
					d.fail(l.key(r.key), ErrMissingKey, "required: %s", r.why)
				}
			}
			if len(d.errs) == before {
				a.Reason, a.Owner = strings.TrimSpace(a.Reason), strings.TrimSpace(a.Owner)
				*p = append(*p, a)
			}
		})
	}
}

// annotationWaivers decodes the annotationWaivers key: {checks: [...]},
// the check IDs a CRD's waiver annotations may waive (an empty list:
// none).
func annotationWaivers(p **AnnotationWaivers) fieldFunc {
	return func(d *decoder, l loc, v any) {
		if v == nil {
			return
		}
		aw := &AnnotationWaivers{Checks: []string{}}
		before := len(d.errs)
		d.object(l, v, fields{
			"checks": waivableChecks(&aw.Checks),
		})
		if len(d.errs) == before {
			*p = aw
		}
	}
}
