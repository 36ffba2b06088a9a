package vk

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-hpc/sluice/internal/kubeconfig"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Uninstall says what `sluice-vk uninstall` removes: the chart's pre-delete
// hook runs it before Helm deletes anything, while sluice-vk and its rights
// still exist.
type Uninstall struct {
	// Node is the virtual node's name.
	Node string
	// Namespace holds sluice-vk's Deployment and the leader Lease.
	Namespace string
	// Deployment is sluice-vk's Deployment, scaled to zero so that no
	// replica registers the node again.
	Deployment string
	// Selector selects sluice-vk's pods, waited for until none is left.
	Selector string
	// DeleteCopies deletes, once the pods are gone, the copies in shadow
	// namespaces (ReplicateCredentials) of every credential of Namespace
	// (deleteCopies).
	DeleteCopies bool
	// Poll is how often the waits look; if zero, one second.
	Poll time.Duration
	Log  *slog.Logger
}

// Run removes what sluice-vk leaves in the cluster, in an order that
// leaves no job and no stuck pod behind:
//  1. the pods bound to the node are deleted and waited for, while the
//     leader runs: it cancels their jobs and takes its finalizer off;
//  2. the Deployment is scaled to zero and its pods waited for: a replica
//     stopping releases the leader Lease, and none is left to register the
//     node again (a standby never deletes the node the leader serves: only
//     this hook does, once no replica runs);
//  3. with DeleteCopies, the copies of Namespace's credentials in shadow
//     namespaces are deleted;
//  4. the node is deleted (its node Lease, owned by it, goes with it) and
//     the leader Lease sluice-vk-<node>.
//
// What is already gone is skipped. It returns when ctx ends, naming the
// step it was waiting for.
func (u Uninstall) Run(ctx context.Context, client kubernetes.Interface) error {
	if u.Poll == 0 {
		u.Poll = time.Second
	}
	log := u.Log
	if log == nil {
		log = slog.Default()
	}
	pods := client.CoreV1().Pods("")
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + u.Node}
	list, err := pods.List(ctx, onNode)
	if err != nil {
		return fmt.Errorf("uninstall: list the pods of node %s: %w", u.Node, err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("uninstall: delete pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		log.Info("sluice-vk uninstall: pod deleted", "pod", p.Namespace+"/"+p.Name)
	}
	if err := u.waitNone(ctx, "the pods of node "+u.Node, func() (int, error) {
		l, err := pods.List(ctx, onNode)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}); err != nil {
		return err
	}

	patch := []byte(`{"spec":{"replicas":0}}`)
	_, err = client.AppsV1().Deployments(u.Namespace).Patch(ctx, u.Deployment, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("uninstall: scale deployment %s/%s to zero: %w", u.Namespace, u.Deployment, err)
	}
	log.Info("sluice-vk uninstall: scaled to zero", "deployment", u.Namespace+"/"+u.Deployment)
	if err := u.waitNone(ctx, "sluice-vk's pods", func() (int, error) {
		l, err := client.CoreV1().Pods(u.Namespace).List(ctx, metav1.ListOptions{LabelSelector: u.Selector})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}); err != nil {
		return err
	}

	if err := u.deleteCopies(ctx, client, log); err != nil {
		return err
	}
	if err := client.CoreV1().Nodes().Delete(ctx, u.Node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("uninstall: delete node %s: %w", u.Node, err)
	}
	log.Info("sluice-vk uninstall: node deleted", "node", u.Node)
	lease := LeaseName(u.Node)
	if err := client.CoordinationV1().Leases(u.Namespace).Delete(ctx, lease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("uninstall: delete lease %s/%s: %w", u.Namespace, lease, err)
	}
	return nil
}

// waitNone polls count until it gives zero, or ctx ends.
func (u Uninstall) waitNone(ctx context.Context, what string, count func() (int, error)) error {
	for {
		n, err := count()
		if err != nil {
			return fmt.Errorf("uninstall: wait for %s: %w", what, err)
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("uninstall: %d of %s still there: %w", n, what, ctx.Err())
		case <-time.After(u.Poll):
		}
	}
}

// Client is a client of the API server from the kubeconfig file, or the
// in-cluster configuration when file is empty, as sluice-vk's own.
func Client(file string) (kubernetes.Interface, error) {
	rc, err := kubeconfig.Load(file)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}
