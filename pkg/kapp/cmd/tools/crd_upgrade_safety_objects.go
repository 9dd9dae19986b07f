package tools

import (
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// addSamples reads the --objects files and gives each pair of the plan the
// custom resources of its CRD (by group and kind) as samples. Objects of
// no CRD of the inputs are skipped with a note.
func (o *CRDUpgradeSafetyOptions) addSamples(plan *evaluation.Plan) error {
	if len(o.FileFlags.Objects) == 0 {
		return nil
	}
	objs, err := inputs.LoadObjects(o.FileFlags.Objects)
	if err != nil {
		return fmt.Errorf("--objects: %w", err)
	}
	byGroupKind := map[string]int{}
	for i, p := range plan.Pairs {
		byGroupKind[p.New.Spec.Group+"/"+p.New.Spec.Names.Kind] = i
	}
	var skipped []string
	for _, obj := range objs {
		apiVersion, _ := obj.Object["apiVersion"].(string)
		kind, _ := obj.Object["kind"].(string)
		group := ""
		if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
			group = apiVersion[:i]
		}
		i, ok := byGroupKind[group+"/"+kind]
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%s (%s %s)", obj.Origin, apiVersion, kind))
			continue
		}
		plan.Pairs[i].Samples = append(plan.Pairs[i].Samples, obj.Object)
	}
	if n := len(skipped); n > 0 {
		more := ""
		if n > 3 {
			more = fmt.Sprintf(" and %d more", len(skipped)-3)
			skipped = skipped[:3]
		}
		o.notef("--objects: %d %s of no CRD of the inputs skipped: %s%s", n, plural.Of(n, "object", "objects"), strings.Join(skipped, ", "), more)
	}
	return nil
}
