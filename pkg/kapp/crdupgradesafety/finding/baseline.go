package finding

// Baseline is the git commit whose CRDs a finding's old side was read from
// (`kapp tools crd-upgrade-safety --git-ref`, which may name several): set
// on the findings by the command that read it, never by the engine.
type Baseline struct {
	// Ref is the revision as given ("origin/main", "v1.2.0").
	Ref string `json:"ref"`
	// Commit is the full hash of the commit compared with.
	Commit string `json:"commit"`
	// MergeBase: Commit is the merge base of Ref and HEAD, not Ref's own
	// commit (Ref moved on after HEAD branched off it).
	MergeBase bool `json:"mergeBase"`
}
