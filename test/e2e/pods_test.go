//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// counting prints "line 1" … "line N", one a second.
func counting(n int) string {
	return "i=1; while [ $i -le " + strconv.Itoa(n) + " ]; do echo line $i; i=$((i+1)); sleep 1; done"
}

func lines(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, "line "+strconv.Itoa(i))
	}
	return out
}

// logs reads a container's logs through the API server (pods/log, what
// kubectl logs calls), which dials the node's kubelet API.
func (e *env) logs(name string, opts corev1.PodLogOptions) []string {
	e.t.Helper()
	rc, err := e.client.CoreV1().Pods(e.ns).GetLogs(name, &opts).Stream(context.Background())
	if err != nil {
		e.t.Fatalf("logs of %s (%+v): %v", name, opts, err)
	}
	defer rc.Close()
	var out []string
	sc := bufio.NewScanner(rc)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		e.t.Fatalf("read logs of %s: %v", name, err)
	}
	return out
}

func TestPodRunsAsJobWithLogsAndEvents(t *testing.T) {
	parallel(t)
	eachSite(t, podRunsAsJobWithLogsAndEvents)
}

func podRunsAsJobWithLogsAndEvents(t *testing.T, on rigSite) {
	e := newEnvOn(t, on.rig, "", nil)
	pod := e.create(e.pod("hello", counting(6)))
	e.waitPod("hello", "its container running", 60*time.Second, containerRunning)

	// followed while it runs: the stream ends when the container does
	followed := e.logs("hello", corev1.PodLogOptions{Follow: true})
	if !slices.Equal(followed, lines(6)) {
		t.Errorf("logs -f: got %q; want %q", followed, lines(6))
	}
	done := e.waitPod("hello", "Succeeded", 60*time.Second, phaseIs(corev1.PodSucceeded))
	if term := done.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("got container state %+v; want terminated with exit code 0", done.Status.ContainerStatuses[0].State)
	}
	if done.Status.HostIP != "127.0.0.1" || done.Status.StartTime == nil {
		t.Errorf("got hostIP %q startTime %v; want the node's address and a start time", done.Status.HostIP, done.Status.StartTime)
	}

	tail := int64(2)
	if got := e.logs("hello", corev1.PodLogOptions{TailLines: &tail}); !slices.Equal(got, lines(6)[4:]) {
		t.Errorf("logs --tail=2: got %q; want %q", got, lines(6)[4:])
	}
	since := int64(3600)
	if got := e.logs("hello", corev1.PodLogOptions{SinceSeconds: &since, Timestamps: true}); len(got) != 6 || !strings.HasSuffix(got[0], "Z line 1") {
		t.Errorf("logs --since=1h --timestamps: got %q; want 6 stamped lines", got)
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", e.kubeconfig, "-n", e.ns, "logs", "hello", "--tail=1").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "line 6" {
			t.Errorf("kubectl logs --tail=1: got %q (%v); want line 6", out, err)
		}
	}

	id := jobID(done)
	for _, want := range []string{"Submitted: submitted as Slurm job " + id, "Running: Slurm job " + id + " running on node", "Succeeded: Slurm job " + id + " completed"} {
		e.waitEvent(pod, want)
	}
	t.Logf("events: %q", e.events(pod))
}

// containerRunning: the container has started (its log or time file
// exists).
func containerRunning(p *corev1.Pod) bool {
	return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

func TestFailingContainerFailsThePod(t *testing.T) {
	parallel(t)
	eachSite(t, failingContainerFailsThePod)
}

func failingContainerFailsThePod(t *testing.T, on rigSite) {
	e := newEnvOn(t, on.rig, "", nil)
	pod := e.create(e.pod("fails", "echo about to fail; exit 3"))
	got := e.waitPod("fails", "Failed", 60*time.Second, phaseIs(corev1.PodFailed))
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Errorf("got container state %+v; want terminated, exit code 3, Error", got.Status.ContainerStatuses[0].State)
	}
	if out := e.logs("fails", corev1.PodLogOptions{}); !slices.Equal(out, []string{"about to fail"}) {
		t.Errorf("logs: got %q; want [about to fail]", out)
	}
	e.waitEvent(pod, "Failed: Slurm job "+jobID(got)+" ended FAILED")
}

func TestDeleteCancelsTheJob(t *testing.T) {
	parallel(t)
	eachSite(t, deleteCancelsTheJob)
}

func deleteCancelsTheJob(t *testing.T, on rigSite) {
	e := newEnvOn(t, on.rig, "", nil)
	pod := e.create(e.pod("sleeper", "echo sleeping; sleep 600"))
	running := e.waitPod("sleeper", "Running", 60*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && jobID(p) != ""
	})
	id := jobID(running)
	if err := e.client.CoreV1().Pods(e.ns).Delete(context.Background(), "sleeper", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	e.waitFor("the pod to be gone", 60*time.Second, func() bool {
		_, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), "sleeper", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	jobs := e.squeue(string(pod.UID))
	if len(jobs) != 1 || jobs[0] != id+"_CANCELLED" {
		t.Errorf("squeue as alice: got %q; want [%s_CANCELLED]", jobs, id)
	}
	dir := path.Join(e.rig.Get(t, "RIG_DATA_ROOT"), e.ns+"-"+string(pod.UID))
	if _, err := e.site.Stat(context.Background(), dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("job directory %s: got %v; want it removed", dir, err)
	}
}

func TestRestartAdoptsTheJob(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	pod := e.create(e.pod("survivor", counting(15)))
	e.waitPod("survivor", "its container running", 60*time.Second, containerRunning)
	e.vk.kill(t)
	t.Log("sluice-vk killed mid-job; starting it again")
	e.vk = e.startVK()
	done := e.waitPod("survivor", "Succeeded", 90*time.Second, phaseIs(corev1.PodSucceeded))
	if got := e.logs("survivor", corev1.PodLogOptions{}); !slices.Equal(got, lines(15)) {
		t.Errorf("logs: got %q; want %q", got, lines(15))
	}
	jobs := e.squeue(string(pod.UID))
	if len(jobs) != 1 || jobs[0] != jobID(done)+"_COMPLETED" {
		t.Errorf("squeue as alice: got %q; want exactly one job, %s_COMPLETED", jobs, jobID(done))
	}
	e.waitEvent(pod, "Adopted: adopted Slurm job "+jobID(done))
}
