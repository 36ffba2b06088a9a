//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// tunnelUID is the user of the sluice-tunnel image.
const tunnelUID = 65532

// TestShadowRunsRestrictedAndComesBack: the shadow lives in a namespace
// sluice made enforcing the restricted Pod Security Standard; its tunnel
// processes run as uid 65532 and read a key the kubelet gave to their
// group only, and the tunnel is up with it. Deleting the shadow pod, then
// killing the tunnel's process, brings the tunnel back through the
// Deployment and the kubelet, with Events on the offloaded pod and the
// job's server reachable each time. Deleting the offloaded pod removes
// every shadow object.
func TestShadowRunsRestrictedAndComesBack(t *testing.T) {
	e := newTunnelEnv(t)
	ctx := context.Background()
	pod := e.pod("restricted", "busybox httpd -f -p 127.0.0.1:8080 -h /etc & sleep 600\n")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	shadowNS := e.ns + shadow.ShadowSuffix
	name := shadow.Name(created)

	e.waitPod("restricted", "Running with its tunnel up", 120*time.Second, func(p *corev1.Pod) bool {
		c := tunnelCondition(p)
		return p.Status.Phase == corev1.PodRunning && c != nil && c.Status == corev1.ConditionTrue
	})
	ns, err := e.client.CoreV1().Namespaces().Get(ctx, shadowNS, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the shadow namespace: %v", err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("shadow namespace %s enforces %q; want restricted", shadowNS, got)
	}
	addr := e.shadowAddr(created, 8080)
	e.reach(addr)

	// the tunnel runs as 65532 and its key is readable by its group only
	first := e.shadowPod(created, shadowNS)
	pids := e.tunnelPids(first)
	for _, pid := range pids {
		if uids := procIDs(t, pid, "Uid:"); uids != fmt.Sprintf("%d %d %d %d", tunnelUID, tunnelUID, tunnelUID, tunnelUID) {
			t.Errorf("sluice-tunnel pid %d runs as uids %q; want %d", pid, uids, tunnelUID)
		}
	}
	key := filepath.Join(e.rig.Get(t, "RIG_K8S_KUBELET_DIR"), "pods", string(first.UID),
		"volumes", "kubernetes.io~secret", "ssh-key", "ssh-privatekey")
	fi, err := os.Stat(key)
	if err != nil {
		t.Fatalf("the shadow's key on the node: %v", err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != tunnelUID || fi.Mode().Perm() != 0o440 {
		t.Errorf("key %s: owner %d:%d mode %v; want 0:%d 0440 (readable through fsGroup, by no other user)", key, st.Uid, st.Gid, fi.Mode().Perm(), tunnelUID)
	}
	t.Logf("shadow pod %s: sluice-tunnel pids %v as uid %d, key mode %v group %d", first.Name, pids, tunnelUID, fi.Mode().Perm(), st.Gid)

	// the shadow pod deleted: the Deployment makes another, whose tunnel
	// comes back
	if err := e.client.CoreV1().Pods(shadowNS).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the shadow pod: %v", err)
	}
	var second *corev1.Pod
	e.waitFor("a new shadow pod running", 90*time.Second, func() bool {
		p := e.shadowPodNow(created, shadowNS)
		if p != nil && p.UID != first.UID {
			second = p
			return true
		}
		return false
	})
	e.waitEvent(created, "was restarted or replaced")
	e.waitBacks(created, 1)
	e.reach(addr)

	// the tunnel's process killed: the kubelet restarts the container
	for _, pid := range e.tunnelPids(second) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill sluice-tunnel %d: %v", pid, err)
		}
	}
	e.waitBacks(created, 2)
	e.reach(addr)

	// deleting the offloaded pod removes the shadow's objects
	if err := e.client.CoreV1().Pods(e.ns).Delete(ctx, "restricted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("every shadow object deleted with its pod", 90*time.Second, func() bool {
		_, errD := e.client.AppsV1().Deployments(shadowNS).Get(ctx, name, metav1.GetOptions{})
		_, errS := e.client.CoreV1().Services(shadowNS).Get(ctx, name, metav1.GetOptions{})
		_, errC := e.client.CoreV1().ConfigMaps(shadowNS).Get(ctx, shadow.NodeConfigMap(name), metav1.GetOptions{})
		return apierrors.IsNotFound(errD) && apierrors.IsNotFound(errS) && apierrors.IsNotFound(errC) &&
			e.shadowPodsLeft(created, shadowNS) == 0
	})
}

// reach fetches /hosts from the job's server through addr, the shadow's
// ClusterIP.
func (e *env) reach(addr string) {
	e.t.Helper()
	e.waitFor("the job's server through "+addr, 60*time.Second, func() bool {
		body, err := httpGet(addr, "/hosts")
		return err == nil && strings.Contains(body, "localhost")
	})
}

// waitBacks waits until the pod has had n TunnelBack Events (the API
// server keeps repeats of one Event as one object with a count).
func (e *env) waitBacks(pod *corev1.Pod, n int32) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d TunnelBack Events", n), 90*time.Second, func() bool {
		list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		})
		if err != nil {
			return false
		}
		var got int32
		for _, ev := range list.Items {
			if ev.Reason == "TunnelBack" {
				got += max(ev.Count, 1)
			}
		}
		return got >= n
	})
}

// shadowPodNow is the running shadow pod of pod in ns, not being deleted,
// or nil.
func (e *env) shadowPodNow(pod *corev1.Pod, ns string) *corev1.Pod {
	sel := labels.Set{shadow.LabelPodUID: string(pod.UID)}.AsSelector().String()
	list, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil
	}
	for i := range list.Items {
		if p := &list.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p
		}
	}
	return nil
}

// shadowPodsLeft counts the shadow pods of pod in ns, whatever their state.
func (e *env) shadowPodsLeft(pod *corev1.Pod, ns string) int {
	sel := labels.Set{shadow.LabelPodUID: string(pod.UID)}.AsSelector().String()
	list, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return -1
	}
	return len(list.Items)
}

// tunnelPids are the sluice-tunnel processes of shadow pod sp on the rig's
// node: those whose cgroup is the pod's (cgroupfs: .../pod<UID>/...).
func (e *env) tunnelPids(sp *corev1.Pod) []int {
	e.t.Helper()
	var pids []int
	e.waitFor("the sluice-tunnel processes of "+sp.Name, 30*time.Second, func() bool {
		pids = podProcesses(string(sp.UID), "sluice-tunnel")
		return len(pids) > 0
	})
	return pids
}

func podProcesses(podUID, comm string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, dir := range dirs {
		c, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
		if err != nil || !strings.Contains(string(cg), "/pod"+podUID+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procIDs returns the fields of the line of /proc/PID/status that starts
// with key ("Uid:", "Gid:"), space-separated.
func procIDs(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("status of pid %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			return strings.Join(strings.Fields(rest), " ")
		}
	}
	return ""
}
