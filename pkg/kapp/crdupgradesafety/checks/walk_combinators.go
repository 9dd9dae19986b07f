package checks

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of allOf, anyOf, oneOf, not: judged by meaning (walkCombinators).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckAllOf, config.CheckAnyOf, config.CheckOneOf, config.CheckNot}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns})

// walkCombinators compares allOf, anyOf, oneOf and not, each by its
// meaning: allOf is a conjunction, anyOf a disjunction, oneOf "exactly one"
// and not a negation. A combinator added where none was tightens; one
// removed relaxes. Branches equal but for documentation are paired first,
// so that a reordering alone is not a finding; what is left is judged by
// the combinator's semantics below. Changed branches are compared at
// path.allOf[i] (etc., at their new index) by every property check, which
// reports what tightened inside them.
func (r *pairRun) walkCombinators(n *node) {
	r.walkAllOf(n, n.old.AllOf, n.new.AllOf)
	r.walkAnyOf(n, intOrStringAnyOf(&n.old), intOrStringAnyOf(&n.new))
	r.walkOneOf(n, n.old.OneOf, n.new.OneOf)
	r.walkNot(n, n.old.Not, n.new.Not)
	n.old.AllOf, n.new.AllOf = nil, nil
	n.old.AnyOf, n.new.AnyOf = nil, nil
	n.old.OneOf, n.new.OneOf = nil, nil
	n.old.Not, n.new.Not = nil, nil
}

// walkAllOf: a value must match every branch. A new branch that accepts
// everything some old branch accepted adds no constraint; any other new or
// changed branch tightens. Old branches removed or loosened relax.
func (r *pairRun) walkAllOf(n *node, o, nw []apiextv1.JSONSchemaProps) {
	if !r.combinatorChanged(n, config.CheckAllOf, o, nw) {
		return
	}
	oldLeft, newLeft := matchIdentical(o, nw)
	var tighter []int // new branches no old branch is contained in
	covering := make([]bool, len(o))
	for _, j := range newLeft {
		if i := r.containedBranch(n, o, &nw[j]); i >= 0 {
			covering[i] = true
		} else {
			tighter = append(tighter, j)
		}
	}
	// Name what tightened by comparing each with an old branch that is
	// left over (in order); a branch with none left over is reported as
	// added.
	spare := unflagged(oldLeft, covering)
	for k, j := range tighter {
		if k < len(spare) {
			r.walk(n.branch(config.CheckAllOf, j), &o[spare[k]], &nw[j])
		} else if n.run.vc.ToggleEnabled(config.CheckAllOf) {
			n.reportAtField(branchPath(n.path, config.CheckAllOf, j), config.CheckAllOf, finding.Change{Kind: "branchAdded", New: finding.FactSchema(&nw[j])},
				"allOf branch added: every value must match it too")
		}
	}
}

// walkAnyOf: a value must match some branch. An old branch whose values
// some new branch accepts (unchanged, loosened, or covered by another)
// loses nothing; branches added relax. An old branch tightened, or removed
// with no new branch accepting its values, may reject stored values.
func (r *pairRun) walkAnyOf(n *node, o, nw []apiextv1.JSONSchemaProps) {
	if !r.combinatorChanged(n, config.CheckAnyOf, o, nw) {
		return
	}
	oldLeft, newLeft := matchIdentical(o, nw)
	var lost []int // old branches no new branch contains
	covering := make([]bool, len(nw))
	for _, i := range oldLeft {
		if j := r.containingBranch(n, &o[i], nw); j >= 0 {
			covering[j] = true
		} else {
			lost = append(lost, i)
		}
	}
	// Name what tightened by comparing each with a new branch that is left
	// over (in order); a branch with none left over is reported as removed.
	spare := unflagged(newLeft, covering)
	for k, i := range lost {
		if k < len(spare) {
			r.walk(n.branch(config.CheckAnyOf, spare[k]), &o[i], &nw[spare[k]])
		} else if n.run.vc.ToggleEnabled(config.CheckAnyOf) {
			n.report(config.CheckAnyOf, finding.Change{Kind: "branchRemoved", Old: strconv.Itoa(i) + " " + finding.FactSchema(&o[i])}, "anyOf branch %d removed: values only it accepted are rejected", i)
		}
	}
}

// walkOneOf: a value must match exactly one branch, so a change in either
// direction may reject stored values: a tightened or removed branch leaves
// values that matched only it matching none, a loosened or added branch
// can make a value match two. Changed branches are compared for what
// tightened (by the property checks) and probed the other way round for
// what loosened.
func (r *pairRun) walkOneOf(n *node, o, nw []apiextv1.JSONSchemaProps) {
	if !r.combinatorChanged(n, config.CheckOneOf, o, nw) {
		return
	}
	enabled := n.run.vc.ToggleEnabled(config.CheckOneOf)
	oldLeft, newLeft := matchIdentical(o, nw)
	paired := min(len(oldLeft), len(newLeft))
	for k := 0; k < paired; k++ {
		i, j := oldLeft[k], newLeft[k]
		pos := n.branch(config.CheckOneOf, j)
		r.walk(pos, &o[i], &nw[j])
		if enabled {
			if loosened := r.probe(pos, &nw[j], &o[i]); len(loosened) > 0 {
				n.reportAtField(pos.path, config.CheckOneOf, finding.Change{Kind: "branchLoosened", Old: finding.FactSchema(&o[i]), New: finding.FactJSON(loosened) + " " + finding.FactSchema(&nw[j])},
					"oneOf branch loosened (%s): an object that matched only another branch may now match this one too, and oneOf rejects it",
					idList(loosened))
			}
		}
	}
	if !enabled {
		return
	}
	for _, j := range newLeft[paired:] {
		n.reportAtField(branchPath(n.path, config.CheckOneOf, j), config.CheckOneOf, finding.Change{Kind: "branchAdded", New: finding.FactSchema(&nw[j])},
			"oneOf branch added: an object that matched one branch may now match two, and oneOf rejects it")
	}
	for _, i := range oldLeft[paired:] {
		n.report(config.CheckOneOf, finding.Change{Kind: "branchRemoved", Old: strconv.Itoa(i) + " " + finding.FactSchema(&o[i])}, "oneOf branch %d removed: objects that matched only it match none", i)
	}
}

// walkNot: a value is valid when it does not match the inner schema, so
// the inner schema works the other way round: tightening it relaxes,
// loosening it tightens. The change is safe when the new inner schema
// matches nothing the old one did not (probed with new as the old side);
// otherwise it is reported with the keywords that loosened.
func (r *pairRun) walkNot(n *node, o, nw *apiextv1.JSONSchemaProps) {
	if nw == nil || !n.run.vc.ToggleEnabled(config.CheckNot) {
		return // removed (or never there): relaxes
	}
	if o == nil {
		n.report(config.CheckNot, finding.Change{Kind: "added", New: finding.FactSchema(nw)}, "not added")
		return
	}
	if SameSchema(o, nw) {
		return
	}
	pos := n.child(n.path.Not())
	pos.combinator = config.CheckNot
	if loosened := r.probe(pos, nw, o); len(loosened) > 0 {
		n.report(config.CheckNot, finding.Change{Kind: "loosened", Old: finding.FactSchema(o), New: finding.FactJSON(loosened) + " " + finding.FactSchema(nw)}, "schema inside not loosened (%s): values it now matches are rejected", idList(loosened))
	}
}

// combinatorChanged handles the cases every combinator shares and reports
// whether branches are left to judge: none when the new schema has no such
// combinator (removed: relaxes) or the lists are equal; an error finding
// when the combinator was added.
func (r *pairRun) combinatorChanged(n *node, id string, o, nw []apiextv1.JSONSchemaProps) bool {
	switch {
	case len(nw) == 0:
		return false
	case len(o) == 0:
		if n.run.vc.ToggleEnabled(id) {
			n.report(id, finding.Change{Kind: "added", New: finding.FactSchemas(nw)}, "%s added with %s", id, plural.Count(len(nw), "sub-schema", "sub-schemas"))
		}
		return false
	}
	return !sameSchemaList(o, nw)
}

// containedBranch returns the index of a branch of o contained in b
// (every value it accepts, b accepts), -1 when there is none.
func (r *pairRun) containedBranch(n *node, o []apiextv1.JSONSchemaProps, b *apiextv1.JSONSchemaProps) int {
	for i := range o {
		if len(r.probe(n.probeAt(config.CheckAllOf), &o[i], b)) == 0 {
			return i
		}
	}
	return -1
}

// containingBranch returns the index of a branch of nw that contains a
// (accepts every value a accepts), -1 when there is none.
func (r *pairRun) containingBranch(n *node, a *apiextv1.JSONSchemaProps, nw []apiextv1.JSONSchemaProps) int {
	for j := range nw {
		if len(r.probe(n.probeAt(config.CheckAnyOf), a, &nw[j])) == 0 {
			return j
		}
	}
	return -1
}

// unflagged returns the indices of idx whose flag is not set, in order.
func unflagged(idx []int, flag []bool) []int {
	var out []int
	for _, i := range idx {
		if !flag[i] {
			out = append(out, i)
		}
	}
	return out
}

// matchIdentical pairs each new branch with an identical old one (but for
// documentation), each old branch used once, and returns the indices left
// unpaired on each side, in order.
func matchIdentical(o, nw []apiextv1.JSONSchemaProps) (oldLeft, newLeft []int) {
	used := make([]bool, len(o))
	for j := range nw {
		matched := false
		for i := range o {
			if !used[i] && SameSchema(&o[i], &nw[j]) {
				used[i], matched = true, true
				break
			}
		}
		if !matched {
			newLeft = append(newLeft, j)
		}
	}
	for i, u := range used {
		if !u {
			oldLeft = append(oldLeft, i)
		}
	}
	return oldLeft, newLeft
}

// branch is the position of branch j of combinator id under n.
func (n *node) branch(id string, j int) position {
	pos := n.child(branchPath(n.path, id, j))
	pos.combinator = id
	return pos
}

// probeAt is the position a probe of a branch of combinator id under n
// runs at: its path is never reported, so it is not built.
func (n *node) probeAt(id string) position {
	return position{path: n.path, combinator: id}
}

func branchPath(parent schemapath.Path, id string, j int) schemapath.Path {
	return parent.Branch(id, j)
}

// probeChecks are the checks a probe runs: every check on, every change
// that may reject a value Strict, and the changes that reject none
// (server-side apply granularity, defaults) ignored. A probe asks what the
// schemas mean, whatever the user's policy reports.
var probeChecks = func() config.VersionChecks {
	vc := config.Default().Checks.SameVersion
	vc.UnhandledFailureMode = config.FailModeClosed
	vc.Default.AdditionEnforcement = config.EnforcementNone
	vc.Default.ChangeEnforcement = config.EnforcementNone
	vc.Default.RemovalEnforcement = config.EnforcementNone
	vc.MapType.ChangeEnforcement = config.EnforcementNone
	vc.ListType.CoarseningEnforcement = config.EnforcementNone
	return vc
}()

// maxProbeNodes bounds the schema nodes all probes of one pair run may
// visit. Probes nest (a branch of a branch of a combinator), so
// adversarial schemas could make them multiply; past the budget a probe
// answers "undecided", which is reported like a change: conservative, and
// the walk stays linear in practice.
const maxProbeNodes = 200_000

// undecided is the check a probe names when its budget is spent.
const undecided = "undecided: too many combinator branches to compare"

// probe compares old with new at pos without reporting, under probeChecks
// and failMode closed, and returns the IDs of the checks that found a
// change. None means that every value old accepts, new accepts too, as far
// as the checks can tell (a change they do not understand counts as one).
func (r *pairRun) probe(pos position, old, new *apiextv1.JSONSchemaProps) []string {
	if r.probeNodes >= maxProbeNodes {
		return []string{undecided}
	}
	sink, vc, unhandled := r.sink, r.vc, r.unhandled
	var ids []string
	r.sink = func(c finding.Draft) { ids = append(ids, c.Check) }
	r.vc, r.unhandled = &probeChecks, config.FailBlock
	r.probing++
	r.walk(pos, old, new)
	r.probing--
	r.sink, r.vc, r.unhandled = sink, vc, unhandled
	return ids
}

// idList renders check IDs sorted, once each: "maximum, required".
func idList(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), ", ")
}

// intOrStringAnyOf returns s.anyOf, or nil when it is the anyOf
// [{type: integer}, {type: string}] that controller-gen emits beside
// x-kubernetes-int-or-string: it restates that keyword (checked by
// checkIntOrString) and constrains nothing more.
func intOrStringAnyOf(s *apiextv1.JSONSchemaProps) []apiextv1.JSONSchemaProps {
	b := s.AnyOf
	if s.XIntOrString && len(b) == 2 &&
		(onlyType(&b[0], "integer") && onlyType(&b[1], "string") ||
			onlyType(&b[0], "string") && onlyType(&b[1], "integer")) {
		return nil
	}
	return b
}

// onlyType reports whether s is {type: t}, documentation aside, without
// copying it.
func onlyType(s *apiextv1.JSONSchemaProps, t string) bool {
	if s.Type != t {
		return false
	}
	x := apiextv1.JSONSchemaProps{Type: t, Description: s.Description, Title: s.Title, Example: s.Example, ExternalDocs: s.ExternalDocs}
	return reflect.DeepEqual(&x, s)
}
