package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCELListSemanticsByClusterVersion: CEL rules on stored objects are
// judged with the CEL semantics of the cluster in front of the check
// (issue 39, item 4; kubernetes#140293). A stored object holds a duplicate
// in a list that has since become a set; the new CRD adds a rule comparing
// it with ==. On 1.37 the check names the object the rule refuses and
// blocks the deploy (nothing applied); on 1.35 the rule accepts it, and the
// deploy applies (the rule's finding a warning under unaffectedEnforcement
// Warn). Then each apiserver, with the rule in place, is asked to update
// the object's spec: 1.37 refuses it with the rule's message, 1.35 accepts
// it, as the check said.
func TestCELListSemanticsByClusterVersion(t *testing.T) {
	e := setup(t)
	n := newNames(t)
	e.appWithCRs(t, n, "celsemantics/crd-atomic.yaml", "celsemantics/crs.yaml")
	e.deployOK(t, n.App, []string{crdDir(t, n, "celsemantics/crd-set.yaml")})
	before := e.snapshot(t, n)
	minor := kubeMinor(t, e)
	newCRD := crdDir(t, n, "celsemantics/crd-rule.yaml")
	cfg := dir(t, map[string][]byte{"config.yaml": n.render(t, "configs/unaffected-warn.yaml")})
	refuses := minor >= 37

	live := e.kapp(t, "", "tools", "crd-upgrade-safety", "--file2", newCRD, "--file2", cfg, "--output", "json")
	if refuses {
		require.Equalf(t, 3, live.exitCode, "the live tools command was expected to find the refused object:\n%s", live.out)
		require.Contains(t, live.out, `"check": "celValidation"`)
		require.Contains(t, live.out, "default/dup")
		require.Contains(t, live.out, "tags must equal expected")
	} else {
		require.Equalf(t, 0, live.exitCode, "the live tools command was expected to pass:\n%s", live.out)
		require.Contains(t, live.out, `"check": "celValidation"`)
		require.NotContains(t, live.out, "tags must equal expected")
	}

	r := e.deploy(t, n.App, []string{newCRD, cfg}, preflightFlag)
	if refuses {
		require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
		requireFinding(t, r.out, "celValidation", n.CRD, "^.spec", "default/dup")
		e.requireUnchanged(t, n, before)
		// What the apiserver does with the rule in place: applied without
		// the check.
		e.deployOK(t, n.App, []string{newCRD})
	} else {
		require.Equalf(t, 0, r.exitCode, "kapp was expected to succeed:\n%s", r.out)
		requireFinding(t, r.out, "celValidation", "Warning", n.CRD, "^.spec")
		require.NotContains(t, r.out, "tags must equal expected")
	}
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "self.tags == self.expected")

	err := e.updateReplicas(t, n, "dup", 2)
	if refuses {
		require.Error(t, err, "1.%d was expected to refuse the update", minor)
		require.Contains(t, err.Error(), "tags must equal expected")
	} else {
		require.NoError(t, err, "1.%d was expected to accept the update", minor)
	}
}

// updateReplicas sets spec.replicas of the custom resource default/name,
// retrying while the CRD's new schema is not in effect yet (the apiserver
// reloads a CRD's validation asynchronously): until the error names the
// rule, or 10s pass without one.
func (e *env) updateReplicas(t *testing.T, n names, name string, replicas int64) error {
	t.Helper()
	ri := e.dyn.Resource(n.gvr("v1")).Namespace("default")
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		var u *unstructured.Unstructured
		u, err = ri.Get(tctx(t), name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(u.Object, replicas, "spec", "replicas"))
		if _, err = ri.Update(tctx(t), u, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating %s: %w", name, err)
		}
		// Accepted: put it back, and ask again until the schema is sure
		// to be in effect.
		replicas++
	}
	return err
}
