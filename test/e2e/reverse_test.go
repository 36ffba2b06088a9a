//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/sitepath"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// probeScript runs in a job with a reverse tunnel to Redis (bare name) and
// the Kubernetes API (FQDN, TLS verified against the cluster CA mounted at
// /mnt): one TLS GET, one PING over IPv6 v4-mapped, then a PING a second,
// each result on a "tick N" line.
const probeScript = `P=/usr/local/bin/sluice-probe
echo "restart=${SLURM_RESTART_COUNT:-0}"
$P tls --url https://kubernetes.default.svc.cluster.local:443/version --ca /mnt/ca.crt
$P redis --addr redis:6379 --v4mapped
i=0
while [ $i -lt 600 ]; do
	echo "tick $i $($P redis --addr redis:6379)"
	i=$((i + 1))
	sleep 1
done
`

// reversePod is a pod running probeScript with its reverse forwards.
func (e *env) reversePod(name string) *corev1.Pod {
	pod := e.pod(name, probeScript)
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis:6379 kubernetes.default.svc.cluster.local:443"}
	pod.Spec.Volumes = []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}},
	}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ca", MountPath: "/mnt", ReadOnly: true}}
	return pod
}

var tickLine = regexp.MustCompile(`^tick (\d+) (.*)$`)

// ticks are the "tick N" results of the job's log, by N; none while the
// log cannot be read (the container waits for the tunnel).
func (e *env) ticks(name string) map[int]string {
	out := map[int]string{}
	b, err := e.client.CoreV1().Pods(e.ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m := tickLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			out[n] = m[2]
		}
	}
	return out
}

// lastTick is the highest tick number of the job's log, -1 if none.
func lastTick(ticks map[int]string) int {
	last := -1
	for n := range ticks {
		last = max(last, n)
	}
	return last
}

// waitTick waits until the job logs a tick after tick `after` that
// contains want, and returns its number.
func (e *env) waitTick(name string, after int, want string, timeout time.Duration) int {
	e.t.Helper()
	found := -1
	e.waitFor(fmt.Sprintf("%s: a tick after %d with %q", name, after, want), timeout, func() bool {
		for n, r := range e.ticks(name) {
			if n > after && strings.Contains(r, want) {
				found = n
				return true
			}
		}
		return false
	})
	return found
}

// asUserOnNode runs args as user in the compute node's network namespace.
func asUserOnNode(user string, args ...string) (string, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", nodeNetns, "runuser", "-u", user, "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestReverseTunnelReachesServicesByName: two pods on one node each reach
// Redis by its bare Service name and the Kubernetes API by FQDN with TLS
// verified, from inside their Charliecloud containers, at once, through
// their own relay addresses; alice's IPv6 v4-mapped client is let through
// and bob is refused over IPv4 and IPv6; the socket directories and sockets
// are alice's alone; a dropped tunnel (node sessions killed, then the login
// sshd restarted) refuses connections meanwhile and serves again without
// the jobs restarting, told by Events.
func TestReverseTunnelReachesServicesByName(t *testing.T) {
	e := newTunnelEnv(t)
	names := []string{"rev-a", "rev-b"}
	var pods []*corev1.Pod
	for _, n := range names {
		pods = append(pods, e.create(e.reversePod(n)))
	}
	jobs := map[string]string{}
	for i, n := range names {
		jobs[n] = jobID(e.waitPod(n, "Running", 120*time.Second, phaseIs(corev1.PodRunning)))
		e.waitTick(n, -1, "says +PONG", 120*time.Second)
		log := strings.Join(e.logs(n, corev1.PodLogOptions{}), "\n")
		if !strings.Contains(log, "tls ok: CN=kube-apiserver 200 OK") || !strings.Contains(log, `"gitVersion"`) {
			t.Errorf("%s: no verified TLS GET of the Kubernetes API in the log:\n%s", n, log)
		}
		if !regexp.MustCompile(`redis \[::ffff:127\.[0-9.]+\]:6379 says \+PONG`).MatchString(log) {
			t.Errorf("%s: alice's IPv6 v4-mapped client was not let through:\n%s", n, log)
		}
		e.waitEvent(pods[i], "reverse tunnel up")
		e.waitTunnel(n, corev1.ConditionTrue, "reverse up on node ")
	}

	// Each pod has its own relay address, from its salt (kept in its job
	// directory), not from its UID alone.
	var addrs []string
	salts := map[types.UID]string{}
	for _, p := range pods {
		salts[p.UID] = e.podSalt(t, p)
		a, err := annotations.DeriveBind(string(p.UID), salts[p.UID])
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, a.String())
	}
	if addrs[0] == addrs[1] {
		t.Fatalf("both pods have relay address %s", addrs[0])
	}

	// The socket directory and its sockets are alice's alone.
	uid, err := strconv.Atoi(e.rig.Get(t, "RIG_USER_UID"))
	if err != nil {
		t.Fatal(err)
	}
	dir := sitepath.SocketDir(e.rig.Get(t, "RIG_SOCKET_DIR_ROOT"), string(pods[0].UID), salts[pods[0].UID])
	checkOwned(t, dir, os.ModeDir|0o700, uid)
	for _, port := range []int{6379, 443} {
		checkOwned(t, filepath.Join(dir, fmt.Sprintf("rev-%d.sock", port)), os.ModeSocket|0o600, uid)
	}

	// bob, on the same node, is refused at pod A's relay, over IPv4 and
	// IPv6 v4-mapped.
	probe := filepath.Join(e.rig.Get(t, "RIG_IMAGE"), "usr", "local", "bin", "sluice-probe")
	bob := e.rig.Get(t, "RIG_OTHER_USER")
	for _, mapped := range []bool{false, true} {
		args := []string{probe, "redis", "--addr", addrs[0] + ":6379"}
		if mapped {
			args = append(args, "--v4mapped")
		}
		out, err := asUserOnNode(bob, args...)
		if err == nil || strings.Contains(out, "PONG") || !strings.HasPrefix(out, "failed:") {
			t.Errorf("bob at %s (v4-mapped %t): %q, %v; want refused", addrs[0], mapped, out, err)
		}
	}

	// The tunnel dropped: the node's sshd stopped and the sessions on it
	// killed; connections meanwhile are refused, not hung.
	user := e.rig.Get(t, "RIG_USER")
	before := lastTick(e.ticks("rev-a"))
	e.rig.Ctl(t, "stop", "sshd-node")
	t.Cleanup(func() { e.rig.Ctl(t, "start", "sshd-node") })
	pids, err := sessionPids(nodeNetns, user)
	if err != nil {
		t.Fatal(err)
	}
	killAll(t, pids)
	down := e.waitTick("rev-a", before, "failed:", 60*time.Second)
	e.rig.Ctl(t, "start", "sshd-node")
	if r := e.ticks("rev-a")[down]; strings.Contains(r, "timeout") || strings.Contains(r, "deadline") {
		t.Errorf("tick %d while the tunnel was down: %q; want a refusal, not a hang", down, r)
	}
	// then the login node's sshd restarted (its sessions cut too)
	restore := e.cutLogin()
	time.Sleep(3 * time.Second)
	restore()
	restored := time.Now()
	for _, n := range names {
		e.waitTick(n, lastTick(e.ticks(n)), "says +PONG", 60*time.Second)
	}
	t.Logf("the jobs reach Redis again %v after the login sshd came back", time.Since(restored).Round(100*time.Millisecond))
	e.waitEvent(pods[0], "reverse tunnel down")
	e.waitEvent(pods[0], "reverse tunnel up again")
	for _, n := range names {
		got := e.waitPod(n, "still Running", 10*time.Second, phaseIs(corev1.PodRunning))
		if jobID(got) != jobs[n] {
			t.Errorf("%s: job %s now; want the same job %s", n, jobID(got), jobs[n])
		}
		if log := strings.Join(e.logs(n, corev1.PodLogOptions{}), "\n"); strings.Count(log, "restart=") != 1 {
			t.Errorf("%s: the job started again:\n%s", n, log)
		}
	}
}

// checkOwned checks that path has mode (type and permissions) and owner uid.
func checkOwned(t *testing.T, path string, mode os.FileMode, uid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("stat: %v", err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode() != mode || int(st.Uid) != uid {
		t.Errorf("%s: %v owned by %d; want %v owned by %d", path, fi.Mode(), st.Uid, mode, uid)
	}
}

// TestReverseTunnelAfterRequeue: a requeue on the same node makes the
// socket directory afresh; the tunnel's old session ends and a new one
// serves the job's second run, without the shadow restarting.
//
// It runs alone: once, beside three others, its second run did not reach
// the Kubernetes API (CI, 2026-12-04, with no log kept to tell why); the
// shadow's log is now shown when that happens.
func TestReverseTunnelAfterRequeue(t *testing.T) {
	e := newTunnelEnv(t)
	pod := e.create(e.reversePod("rev-rq"))
	running := e.waitPod("rev-rq", "Running", 120*time.Second, phaseIs(corev1.PodRunning))
	e.waitTick("rev-rq", -1, "says +PONG", 120*time.Second)
	e.waitEvent(pod, "reverse tunnel up")
	// The salt, kept in the job directory, names the same directory for
	// the second run.
	dir := sitepath.SocketDir(e.rig.Get(t, "RIG_SOCKET_DIR_ROOT"), string(pod.UID), e.podSalt(t, pod))
	first := birth(t, dir)
	shadowBefore := e.shadowPod(pod, e.ns+"-shadow")

	job := jobID(running)
	if out, err := e.site.Run(context.Background(), nil, "scontrol", "requeue", job); err != nil {
		t.Fatalf("scontrol requeue %s: %v: %s", job, err, out)
	}
	e.waitEvent(pod, "requeued")
	// Slurm holds a requeued job back for about two minutes (BeginTime).
	var second string
	e.waitFor("the second run reaching Redis", 300*time.Second, func() bool {
		b, err := e.client.CoreV1().Pods(e.ns).GetLogs("rev-rq", &corev1.PodLogOptions{}).DoRaw(context.Background())
		_, after, ok := strings.Cut(string(b), "restart=1")
		second = after
		return err == nil && ok && regexp.MustCompile(`(?m)^tick \d+ redis \S+ says \+PONG$`).MatchString(after)
	})
	if !strings.Contains(second, "tls ok: CN=kube-apiserver 200 OK") {
		sp := e.shadowPod(pod, e.ns+"-shadow")
		b, err := e.client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, &corev1.PodLogOptions{Container: shadow.ContainerReverse}).DoRaw(context.Background())
		t.Errorf("the second run did not reach the Kubernetes API:\n%s\nssh-reverse's log (%v):\n%s", second, err, b)
	}
	// The inode number cannot tell: ext4 gives a directory made right
	// after one was removed the freed number.
	if now := birth(t, dir); !now.After(first) {
		t.Errorf("socket directory born %v after the requeue; want a new directory (the first was born %v)", now, first)
	}
	e.waitEvent(pod, "reverse tunnel up again")
	if sp := e.shadowPod(pod, e.ns+"-shadow"); sp.UID != shadowBefore.UID || restarts(sp) != 0 {
		t.Errorf("shadow pod %s (%d restarts) after the requeue; want %s with none", sp.UID, restarts(sp), shadowBefore.UID)
	}
}

// TestReverseTunnelUserspaceSshd: with the node's sshd refusing forwarding,
// Sshd userspace serves the same Redis and Kubernetes API as the node mode.
func TestReverseTunnelUserspaceSshd(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{reverse: "      Sshd: userspace\n"})
	e.rig.OverrideNodeSSHD(t, "AllowStreamLocalForwarding no\nAllowTcpForwarding no\n")
	pod := e.create(e.reversePod("rev-us"))
	e.waitTick("rev-us", -1, "says +PONG", 120*time.Second)
	log := strings.Join(e.logs("rev-us", corev1.PodLogOptions{}), "\n")
	if !strings.Contains(log, "tls ok: CN=kube-apiserver 200 OK") {
		t.Errorf("no verified TLS GET of the Kubernetes API through the user-space sshd:\n%s", log)
	}
	e.waitEvent(pod, "reverse tunnel up")
	sp := e.shadowPod(pod, e.ns+shadow.ShadowSuffix)
	for _, c := range sp.Spec.Containers {
		if c.Name == shadow.ContainerReverse && !slices.Contains(c.Args, "--sshd=userspace") {
			t.Errorf("ssh-reverse args %q; want --sshd=userspace", c.Args)
		}
	}
}

// TestReverseTunnelOverSrun: with ssh from the login node to the compute
// node refused to the site account, NodeExec srun carries the session
// inside the job and serves the same Redis and Kubernetes API.
func TestReverseTunnelOverSrun(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{reverse: "      NodeExec: srun\n"})
	e.rig.OverrideNodeSSHD(t, "DenyUsers "+e.rig.Get(t, "RIG_USER")+"\n")
	pod := e.create(e.reversePod("rev-srun"))
	e.waitTick("rev-srun", -1, "says +PONG", 120*time.Second)
	log := strings.Join(e.logs("rev-srun", corev1.PodLogOptions{}), "\n")
	if !strings.Contains(log, "tls ok: CN=kube-apiserver 200 OK") {
		t.Errorf("no verified TLS GET of the Kubernetes API over srun:\n%s", log)
	}
	e.waitEvent(pod, "reverse tunnel up")
	sp := e.shadowPod(pod, e.ns+shadow.ShadowSuffix)
	b, err := e.client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, &corev1.PodLogOptions{Container: shadow.ContainerReverse}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(b), "login node (srun)") {
		t.Errorf("ssh-reverse logs do not show the srun carrier (%v):\n%s", err, b)
	}
}

// birth is when the directory dir was made (statx's birth time), the zero
// time when it cannot be read.
func birth(t *testing.T, dir string) time.Time {
	t.Helper()
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil {
		t.Errorf("statx %s: %v", dir, err)
		return time.Time{}
	}
	if st.Mask&unix.STATX_BTIME == 0 {
		t.Fatalf("statx %s: the file system keeps no birth time", dir)
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
}

// podSalt is the salt sluice-vk drew for pod, read from its job directory.
func (e *env) podSalt(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.rig.Get(t, "RIG_DATA_ROOT"), pod.Namespace+"-"+string(pod.UID), "tunnel.salt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
