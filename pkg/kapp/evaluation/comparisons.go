package evaluation

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
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
// (crdupgradesafety.Validators). Safe for concurrent use; a nil
// *Comparisons compares every time.
type Comparisons struct {
	max int
	// validators keeps the validators of the batches of stored objects
	// read under the new CRDs of the runs (crdupgradesafety.Validators).
	validators *crdupgradesafety.Validators

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *comparisonEntry, most recently used first
	hits    int
}

type comparisonEntry struct {
	key      string
	findings []crdupgradesafety.Finding
}

// DefaultComparisons is the bound of the webhook's Comparisons: the pairs
// of a burst of every CRD of a large operator, several times over. A
// result holds the findings of one pair, small beside its CRDs.
const DefaultComparisons = 256

// DefaultValidators bounds the validators Comparisons keeps: one per CRD
// version and shape of batch. An entry holds the whole structural schema
// of its version (CEL rules are compiled against it) and keeps its CRD
// alive: megabytes for the largest CRDs, so the bound is the burst of 10
// CRDs of the benchmark with some room, not more.
const DefaultValidators = 16

// validatorsOf returns the validators' cache of c, nil for a nil c.
func (c *Comparisons) validatorsOf() *crdupgradesafety.Validators {
	if c == nil {
		return nil
	}
	return c.validators
}

// NewComparisons returns a cache of at most max comparisons.
func NewComparisons(max int) *Comparisons {
	return &Comparisons{max: max, entries: map[string]*list.Element{},
		validators: crdupgradesafety.NewValidators(DefaultValidators)}
}

// compare returns crdupgradesafety.Compare(p.Old, p.New, cfg), from the
// cache when p has a Key and a comparison of the same key is there. The
// findings returned are the caller's (a copy of those kept).
func (c *Comparisons) compare(p Pair, cfg *config.Settings) []crdupgradesafety.Finding {
	if c == nil || p.Key == "" {
		return crdupgradesafety.Compare(p.Old, p.New, cfg)
	}
	key, err := comparisonKey(p.Key, cfg)
	if err != nil {
		return crdupgradesafety.Compare(p.Old, p.New, cfg)
	}
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		c.hits++
		out := cloneFindings(e.Value.(*comparisonEntry).findings)
		c.mu.Unlock()
		return out
	}
	c.mu.Unlock()
	findings := crdupgradesafety.Compare(p.Old, p.New, cfg)
	kept := cloneFindings(findings)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok { // compared meanwhile by another run
		c.lru.MoveToFront(e)
		return findings
	}
	c.entries[key] = c.lru.PushFront(&comparisonEntry{key: key, findings: kept})
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*comparisonEntry).key)
	}
	return findings
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
func cloneFindings(findings []crdupgradesafety.Finding) []crdupgradesafety.Finding {
	return slices.Clone(findings)
}
