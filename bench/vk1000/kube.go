//go:build bench

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/provider"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// benchPod is the i-th pod: one container sleeping for an hour, bound to
// the node, with no service account token (RuntimeNone mounts nothing).
func benchPod(ns, node string, i int) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: &no,
			RestartPolicy:                corev1.RestartPolicyNever,
			Containers:                   []corev1.Container{{Name: "sleep", Image: "busybox", Command: []string{"sleep", "3600"}}},
			Tolerations:                  []corev1.Toleration{{Key: provider.TaintKey, Operator: corev1.TolerationOpExists}},
		},
	}
}

func podName(i int) string { return fmt.Sprintf("p-%04d", i) }

// createPods creates pods [from, to) with the given number of concurrent
// creators, telling t when each create was sent.
func createPods(ctx context.Context, c kubernetes.Interface, t *tracker, ns, node string, from, to, creators int) error {
	next := make(chan int)
	errc := make(chan error, creators)
	var wg sync.WaitGroup
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t.created(podName(i), time.Now())
				if _, err := c.CoreV1().Pods(ns).Create(ctx, benchPod(ns, node, i), metav1.CreateOptions{}); err != nil {
					errc <- fmt.Errorf("create pod %s: %w", podName(i), err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case err = <-errc:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errc:
	default:
	}
	return err
}

// tracker follows the namespace's pods through a watch: their phase, UID,
// and when each was sent to be created, first seen Running and first seen
// Succeeded. It keeps no pod objects.
type tracker struct {
	mu        sync.Mutex
	phase     map[string]corev1.PodPhase
	inPhase   map[corev1.PodPhase]int
	uid       map[string]string
	sent      map[string]time.Time
	running   map[string]time.Time
	succeeded map[string]time.Time
	modified  int           // MODIFIED events seen: writes to the pods
	changed   chan struct{} // closed and replaced at every event
}

func newTracker() *tracker {
	return &tracker{phase: map[string]corev1.PodPhase{}, inPhase: map[corev1.PodPhase]int{}, uid: map[string]string{}, sent: map[string]time.Time{},
		running: map[string]time.Time{}, succeeded: map[string]time.Time{}, changed: make(chan struct{})}
}

// created records when the create of pod name was sent.
func (t *tracker) created(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent[name] = at
}

// run watches until ctx ends, watching again from the last resource
// version whenever the server closes the watch.
func (t *tracker) run(ctx context.Context, c kubernetes.Interface, ns string) error {
	rv := ""
	for ctx.Err() == nil {
		w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch pods: %w", err)
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = pod.ResourceVersion
			if ev.Type != watch.Bookmark {
				t.observe(ev.Type, pod, time.Now())
			}
		}
		w.Stop()
	}
	return nil
}

func (t *tracker) observe(typ watch.EventType, pod *corev1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.phase[pod.Name]; ok {
		t.inPhase[old]--
	}
	if typ == watch.Modified {
		t.modified++
	}
	if typ == watch.Deleted {
		delete(t.phase, pod.Name)
		delete(t.uid, pod.Name)
	} else {
		t.phase[pod.Name] = pod.Status.Phase
		t.inPhase[pod.Status.Phase]++
		t.uid[pod.Name] = string(pod.UID)
		if _, seen := t.running[pod.Name]; !seen && pod.Status.Phase == corev1.PodRunning {
			t.running[pod.Name] = now
		}
		if _, seen := t.succeeded[pod.Name]; !seen && pod.Status.Phase == corev1.PodSucceeded {
			t.succeeded[pod.Name] = now
		}
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// waitFor waits until cond, called under the tracker's lock, holds.
func (t *tracker) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		t.mu.Lock()
		ok := cond()
		ch := t.changed
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-ch:
		}
	}
}

// countPhase is how many pods are in phase; the caller holds t.mu.
func (t *tracker) countPhase(phase corev1.PodPhase) int { return t.inPhase[phase] }

// cleanup deletes the namespace's pods while the virtual kubelet still runs
// (it cancels their jobs and lifts their finalizers) and waits for them to go.
func cleanupPods(ctx context.Context, c kubernetes.Interface, t *tracker, ns string, timeout time.Duration) error {
	if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete pods: %w", err)
	}
	return t.waitFor(ctx, "the pods to be deleted", timeout, func() bool { return len(t.phase) == 0 })
}

// forceCleanup removes what is left once the virtual kubelet is gone:
// finalizers taken off the remaining pods, then the node and namespace.
func forceCleanup(ctx context.Context, c kubernetes.Interface, ns, node string) error {
	var errs []error
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, fmt.Errorf("list pods: %w", err))
	} else {
		zero := int64(0)
		for _, pod := range list.Items {
			if len(pod.Finalizers) > 0 {
				patch := []byte(`{"metadata":{"finalizers":null}}`)
				if _, err := c.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					errs = append(errs, fmt.Errorf("lift finalizer of %s: %w", pod.Name, err))
				}
			}
			_ = c.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	if err := c.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("delete node: %w", err))
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("delete namespace: %w", err))
	}
	return errors.Join(errs...)
}

// modifiedPods is how many writes to the pods the watch has seen.
func (t *tracker) modifiedPods() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.modified
}

// eventsByReason counts the namespace's Events by reason (an Event seen
// again counts its repetitions).
func eventsByReason(ctx context.Context, c kubernetes.Interface, ns string) (map[string]int, error) {
	list, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		out[e.Reason] += max(1, int(e.Count))
	}
	return out, nil
}
