package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The clusters of hack/cluster.sh have no scheduler and no kubelet: a
// Deployment's pods stay Pending and it never becomes available, so a kapp
// deploy that waits for it never ends. fakeKubelet stands for both, for
// the pods of one namespace: it registers a Node (Ready, its Lease
// renewed), binds each pending pod to it (the Binding subresource, as the
// scheduler does), runs the test's hook for the pod (its "container
// starting": e.g. a conversion webhook build on loopback, the process the
// pod stands for), then sets the pod Running and Ready (the status
// subresource, as the kubelet does), and deletes at once each pod marked
// for deletion (as the kubelet does once its containers stopped). No
// container runs: the image is never pulled.

// podHook is run for a pod before the fake kubelet reports it Ready; an
// error leaves the pod not Ready (the kubelet retries the hook).
type podHook func(ctx context.Context, pod *corev1.Pod) error

type fakeKubelet struct {
	e         *env
	node      string
	namespace string
	hooks     map[string]podHook // Deployment name -> hook
	started   map[string]bool    // pod UIDs whose hook ran
	mu        sync.Mutex
	ready     []string // pods reported Ready, in order (namespace/name)
	errs      []string // errors of its last rounds
	cancel    context.CancelFunc
	done      chan struct{}
}

// fakeKubeletPoll is how often it looks at the namespace's pods.
const fakeKubeletPoll = 200 * time.Millisecond

// startFakeKubelet runs a fake kubelet for the pods of namespace until the
// test ends; hooks, by Deployment name, run for that Deployment's pods
// before they become Ready. Start it before the kapp app whose cleanup
// deletes the pods (kapp delete), so that it outlives that cleanup.
func (e *env) startFakeKubelet(t *testing.T, namespace string, hooks map[string]podHook) *fakeKubelet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := &fakeKubelet{e: e, node: "fake-" + namespace, namespace: namespace, hooks: hooks, started: map[string]bool{},
		cancel: cancel, done: make(chan struct{})}
	require.NoError(t, k.register(tctx(t)))
	go k.run(ctx)
	t.Cleanup(func() {
		k.cancel()
		<-k.done
		k.mu.Lock()
		if len(k.errs) > 0 {
			t.Logf("fake kubelet %s: last errors:\n%s", k.node, indent(fmt.Sprint(k.errs)))
		}
		k.mu.Unlock()
		// The pod GC controller deletes what is still bound to it.
		err := e.core.CoreV1().Nodes().Delete(tctx(t), k.node, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting node %s: %v", k.node, err)
		}
		_ = e.core.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(tctx(t), k.node, metav1.DeleteOptions{})
	})
	return k
}

// readyPods returns the pods it reported Ready so far (namespace/name).
func (k *fakeKubelet) readyPods() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.ready...)
}

// register creates the Node, Ready, and its Lease.
func (k *fakeKubelet) register(ctx context.Context) error {
	nodes := k.e.core.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.node,
		Labels: map[string]string{"kubernetes.io/hostname": k.node, "e2e.example.com/fake-kubelet": "true"}}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", k.node, err)
	}
	// The node lifecycle controller taints a new node at once: retried
	// on the conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if node, err = nodes.Get(ctx, k.node, metav1.GetOptions{}); err != nil {
			return err
		}
		now := metav1.Now()
		node.Status = corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "fake kubelet of the e2e tests", LastHeartbeatTime: now, LastTransitionTime: now}},
			Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
		}
		_, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("setting node %s ready: %w", k.node, err)
	}
	_, err = k.e.core.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: k.node},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(k.node), LeaseDurationSeconds: ptr(int32(40)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the lease of node %s: %w", k.node, err)
	}
	return nil
}

func (k *fakeKubelet) run(ctx context.Context) {
	defer close(k.done)
	tick := time.NewTicker(fakeKubeletPoll)
	defer tick.Stop()
	lastRenew := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var errs []string
		if time.Since(lastRenew) > 10*time.Second {
			if err := k.renew(ctx); err != nil {
				errs = append(errs, err.Error())
			} else {
				lastRenew = time.Now()
			}
		}
		if err := k.sync(ctx); err != nil {
			errs = append(errs, err.Error())
		}
		if len(errs) > 0 && ctx.Err() == nil {
			k.mu.Lock()
			k.errs = errs
			k.mu.Unlock()
		}
	}
}

// renew renews the node's Lease (its heartbeat for the node lifecycle
// controller, which otherwise marks it NotReady after its grace period).
func (k *fakeKubelet) renew(ctx context.Context) error {
	leases := k.e.core.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	lease, err := leases.Get(ctx, k.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("renewing the lease of node %s: %w", k.node, err)
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renewing the lease of node %s: %w", k.node, err)
	}
	return nil
}

// sync does one round over the namespace's pods: delete those marked for
// deletion, bind the pending ones, start and report Ready the bound ones.
func (k *fakeKubelet) sync(ctx context.Context) error {
	pods := k.e.core.CoreV1().Pods(k.namespace)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the pods of %s: %w", k.namespace, err)
	}
	for i := range list.Items {
		pod := &list.Items[i]
		switch {
		case pod.DeletionTimestamp != nil:
			if pod.Spec.NodeName == "" || pod.Spec.NodeName == k.node {
				err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)),
					Preconditions: &metav1.Preconditions{UID: &pod.UID}})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
				}
			}
		case pod.Spec.NodeName == "":
			err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: k.node}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("binding pod %s to node %s: %w", pod.Name, k.node, err)
			}
		case pod.Spec.NodeName == k.node && !podReady(pod):
			if err := k.start(ctx, pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// start runs the hook of the pod's Deployment (once per pod), then sets
// the pod Running with every container started and ready.
func (k *fakeKubelet) start(ctx context.Context, pod *corev1.Pod) error {
	k.mu.Lock()
	started := k.started[string(pod.UID)]
	k.mu.Unlock()
	if !started {
		deployment, err := k.deploymentOf(ctx, pod)
		if err != nil {
			return err
		}
		if hook := k.hooks[deployment]; hook != nil {
			if err := hook(ctx, pod); err != nil {
				return fmt.Errorf("starting pod %s of deployment %s: %w", pod.Name, deployment, err)
			}
		}
		k.mu.Lock()
		k.started[string(pod.UID)] = true
		k.mu.Unlock()
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.HostIP = "127.0.0.1"
	pod.Status.PodIP = "127.0.0.1"
	pod.Status.StartTime = &now
	pod.Status.Conditions = nil
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if _, err := k.e.core.CoreV1().Pods(k.namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the next round sees the pod as it is now
		}
		return fmt.Errorf("setting pod %s ready: %w", pod.Name, err)
	}
	k.mu.Lock()
	k.ready = append(k.ready, pod.Namespace+"/"+pod.Name)
	k.mu.Unlock()
	return nil
}

// deploymentOf returns the name of the Deployment that owns the pod
// through its ReplicaSet, or "".
func (k *fakeKubelet) deploymentOf(ctx context.Context, pod *corev1.Pod) (string, error) {
	rsRef := metav1.GetControllerOf(pod)
	if rsRef == nil || rsRef.Kind != "ReplicaSet" {
		return "", nil
	}
	rs, err := k.e.core.AppsV1().ReplicaSets(k.namespace).Get(ctx, rsRef.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the replica set of pod %s: %w", pod.Name, err)
	}
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		return ref.Name, nil
	}
	return "", nil
}
