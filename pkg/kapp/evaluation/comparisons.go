package evaluation

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	"github.com/crdsafety/kapp/pkg/kapp/internal/lru"
)

// Comparisons keeps the results of recent comparisons of pairs
// (crdupgradesafety.Compare: the findings before any stored object is
// read), least recently used first out beyond its bound: identical
// reviews are common (a server-side dry run followed by the write, a
// GitOps controller re-applying an unchanged CRD, the apiserver's
// retries), and the comparison of a large CRD was a third of the CPU of
// its review. A result is kept under the pair's Key (the content of both
// CRDs, the waiver annotations of the new one included) and everything
// else the comparison reads: the settings (their JSON), the Kubernetes
// version judged and which waivers have expired at the run's clock. A
// change of any of them is another key: the cache never changes a
// verdict (TestComparisonsCache). Stored objects are never cached: they
// are read by every run, but the validators built for a batch of them are
// kept too, by the CRD they were built from (the webhook's CRDs are shared
// and never modified), the version and the shape of the batch
// (objects.Validators). Safe for concurrent use; a nil
// *Comparisons compares every time.
type Comparisons struct {
	// validators keeps the validators of the batches of stored objects
	// read under the new CRDs of the runs (objects.Validators).
	validators *objects.Validators
	cache      *lru.Cache[string, []finding.Finding]
}

// DefaultComparisons and DefaultComparisonsBytes bound the webhook's
// Comparisons: the pairs of a burst of every CRD of a large operator,
// several times over, within 32 MiB of findings (findingsMemory): a
// result holds the findings of one pair, usually small beside its CRDs,
// but one comparison of a large CRD held 13 MB.
const (
	DefaultComparisons      = 256
	DefaultComparisonsBytes = 32 << 20
)

// DefaultValidators bounds the validators Comparisons keeps: one per CRD
// version and shape of batch. An entry holds the whole structural schema
// of its version (CEL rules are compiled against it) and keeps its CRD
// alive: megabytes for the largest CRDs, so the bound is the burst of 10
// CRDs of the benchmark with some room, not more; and
// objects.DefaultValidatorsBytes of their estimated memory.
const DefaultValidators = 16

// validatorsOf returns the validators' cache of c, nil for a nil c.
func (c *Comparisons) validatorsOf() *objects.Validators {
	if c == nil {
		return nil
	}
	return c.validators
}

// NewComparisons returns a cache of at most max comparisons and
// DefaultComparisonsBytes of findings.
func NewComparisons(max int) *Comparisons {
	return NewComparisonsWithin(max, DefaultComparisonsBytes)
}

// NewComparisonsWithin returns a cache of at most max comparisons and
// maxBytes of findings (findingsMemory).
func NewComparisonsWithin(max int, maxBytes int64) *Comparisons {
	return &Comparisons{cache: lru.New[string, []finding.Finding](max, maxBytes),
		validators: objects.NewValidators(DefaultValidators)}
}

// Stats are the counters of the cache of comparisons.
func (c *Comparisons) Stats() lru.Stats { return c.cache.Stats() }

// compare returns crdupgradesafety.Compare(p.Old, p.New, cfg), from the
// cache when p has a Key and a comparison of the same key is there. The
// findings returned are the caller's (a copy of those kept).
func (c *Comparisons) compare(p Pair, cfg *config.Settings) []finding.Finding {
	return c.compareWith(p, finding.NewPolicy(cfg, p.New.Name))
}

// compareWith is compare under the pair's policy pol.
func (c *Comparisons) compareWith(p Pair, pol *finding.Policy) []finding.Finding {
	cfg := pol.Settings
	if c == nil || p.Key == "" {
		return crdupgradesafety.CompareWith(pol, p.Old, p.New)
	}
	key, err := comparisonKey(p.Key, cfg)
	if err != nil {
		return crdupgradesafety.CompareWith(pol, p.Old, p.New)
	}
	if kept, ok := c.cache.Get(key); ok {
		return cloneFindings(kept)
	}
	findings := crdupgradesafety.CompareWith(pol, p.Old, p.New)
	kept := cloneFindings(findings)
	c.cache.Add(key, kept, findingsMemory(kept)+int64(len(key)))
	return findings
}

// findingMemory is the memory of a Finding's struct, without what it
// points to.
const findingMemory = int64(unsafe.Sizeof(finding.Finding{}))

// findingsMemory estimates the memory findings hold: their structs and
// the length of their JSON, which holds each string they reach once and
// more than the structs they point to (TestFindingsSizeEstimate). A
// result that does not encode is not kept (the largest estimate).
func findingsMemory(findings []finding.Finding) int64 {
	data, err := json.Marshal(findings)
	if err != nil {
		return math.MaxInt64
	}
	return int64(len(findings))*findingMemory + int64(len(data))
}

// comparisonKey is the key of a comparison of the pair of pairKey under
// cfg: the pair's key, the SHA-256 of the settings' JSON, the Kubernetes
// version judged (not in the JSON), and for each waiver whether it has
// expired at cfg's clock (waivers expire at the end of a day).
func comparisonKey(pairKey string, cfg *config.Settings) (string, error) {
	settings, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encoding the settings: %w", err)
	}
	sum := sha256.Sum256(settings)
	expired := make([]byte, len(cfg.Waivers))
	now := cfg.Clock()
	for i := range cfg.Waivers {
		if cfg.Waivers[i].ExpiredAt(now) {
			expired[i] = 1
		}
	}
	for i := range cfg.AcceptDataLoss {
		if cfg.AcceptDataLoss[i].ExpiredAt(now) {
			expired = append(expired, 'a')
		} else {
			expired = append(expired, 'A')
		}
	}
	return fmt.Sprintf("%s\x00%x\x00%s\x00%x\x00%t", pairKey, sum, cfg.KubeVersion.OrDefault(), expired, cfg.Live), nil
}

// cloneFindings copies findings deeply enough that the caller may change
// the copy (ApplyImpacts sets each finding's impact and level).
func cloneFindings(findings []finding.Finding) []finding.Finding {
	return slices.Clone(findings)
}
