//go:build e2e

// Package e2e runs sluice-vk end to end on the rig: a real API server, real
// Slurm over SSH, the virtual kubelet built and started as a process, pods
// made with client-go. Run with `go test -tags e2e ./test/e2e/` once
// `hack/rig/rig.sh up` has started the rig with its control plane.
package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/rigenv"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// env is one test's world: a namespace, a virtual node of its own and the
// site as alice sees it.
type env struct {
	t          *testing.T
	rig        *testrig.Rig
	client     kubernetes.Interface
	kubeconfig string
	site       site.Runner
	cfgFile    string
	node       string
	ns         string
	image      string
	vk         *vkProcess
	vkArgs     []string
}

var (
	buildOnce sync.Once
	vkBinary  string
	buildErr  error
)

// buildVK builds cmd/sluice-vk once per test binary.
func buildVK(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "sluice-vk-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		vkBinary = filepath.Join(dir, "sluice-vk")
		cmd := exec.Command("go", "build", "-ldflags", stampVersion, "-o", vkBinary, "./cmd/sluice-vk")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/sluice-vk: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return vkBinary
}

// parallel marks a test that shares nothing with the others but the rig's
// capacity: its own namespace, virtual node, pods and jobs; no sshd of the
// site stopped or reconfigured, no process or session of the site account
// counted, and no job listening on a fixed port of the node (the rig has
// one compute node: two jobs serving 8080 on its loopback collide). Go runs such tests together once the serial ones are done (at
// most -parallel at once), so a serial test never sees their jobs, shadows
// or sessions. It must be the test's first call.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

func suffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// newEnv makes a namespace, writes a configuration for a node of the test's
// own and starts sluice-vk on it. Cleanup deletes the pods (while the node
// still runs, so that their jobs are cancelled and finalizers removed), then
// stops the virtual kubelet and deletes the node and the namespace.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, "", nil)
}

// newEnvWith is newEnv with network appended to the configuration after
// the keys of Network.SSH (indent four spaces for more SSH keys, two for
// Network's own; $NAMESPACE stands for the test's namespace); setup runs once the namespace exists, before sluice-vk
// starts, and may set e.vkArgs.
func newEnvWith(t *testing.T, network string, setup func(e *env)) *env {
	t.Helper()
	return newEnvOn(t, testrig.Load(t), network, setup)
}

// newEnvOn is newEnvWith against rig, one of the rig's sites (see
// eachSite): the configuration names its login node, host keys, data and
// socket roots and image, and e.site runs commands there.
func newEnvOn(t *testing.T, rig *testrig.Rig, network string, setup func(e *env)) *env {
	t.Helper()
	_, kubeconfig, client := rigCluster(t)
	s := suffix()
	e := &env{t: t, rig: rig, client: client, kubeconfig: kubeconfig,
		node: "e2e-" + s, ns: "e2e-" + s, image: rig.Get(t, "RIG_IMAGE")}
	network = strings.ReplaceAll(network, "$NAMESPACE", e.ns)

	cfgText := fmt.Sprintf(`NodeName: %s
Site:
  Access: ssh
  DataRoot: %s
  SocketDirRoot: %s
  ContainerRuntime: charliecloud
  PollInterval: 1s
Network:
  SSH:
    LoginHost: %s
    Port: %s
    User: %s
    KeyFile: %s
    KnownHostsFile: %s
%sNode:
  InternalIP: 127.0.0.1
  KubeletAPI:
    Listen: 127.0.0.1:0
`, e.node, rig.Get(t, "RIG_DATA_ROOT"), rig.Get(t, "RIG_SOCKET_DIR_ROOT"), rig.Get(t, "RIG_LOGIN_ADDR"),
		rig.Get(t, "RIG_LOGIN_PORT"), rig.Get(t, "RIG_USER"), rig.Get(t, "RIG_KEY"), rig.Get(t, "RIG_KNOWN_HOSTS"), network)
	cfg, err := config.Parse([]byte(cfgText))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	e.cfgFile = filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(e.cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	if e.site, err = site.Open(cfg, nil); err != nil {
		t.Fatalf("site: %v", err)
	}

	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if setup != nil {
		setup(e)
	}
	approveKubeletCSRs(t, client, e.node, isUser(whoAmI(t, client)))
	e.vk = e.startVK()
	t.Cleanup(func() {
		e.vk.stop(t)
		_ = client.CoreV1().Nodes().Delete(ctx, e.node, metav1.DeleteOptions{})
		_ = client.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{})
	})
	t.Cleanup(e.deletePods)
	e.waitFor("the node to be Ready", 60*time.Second, func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		return err == nil && nodeReady(n)
	})
	e.waitFor("the default service account", 60*time.Second, func() bool {
		_, err := client.CoreV1().ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	return e
}

// rigCluster returns the rig, its admin kubeconfig and a client of its
// API server; a rig without a control plane is unavailable.
func rigCluster(t *testing.T) (*testrig.Rig, string, kubernetes.Interface) {
	t.Helper()
	rig := testrig.Load(t)
	kubeconfig, ok := lookup("RIG_KUBECONFIG")
	if !ok {
		testrig.Unavailable(t, "the rig has no Kubernetes control plane (RIG_KUBECONFIG missing from rig.env)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return rig, kubeconfig, client
}

// lookup reads a key of rig.env that an older rig may not have.
func lookup(key string) (string, bool) {
	vars, err := rigenv.Read(rigenv.File())
	v := vars[key]
	return v, err == nil && v != ""
}

func nodeReady(n *corev1.Node) bool {
	ready, site := false, false
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			ready = c.Status == corev1.ConditionTrue
		case "SiteReachable":
			site = c.Status == corev1.ConditionTrue
		}
	}
	return ready && site
}

// deletePods deletes the namespace's pods and waits until they are gone.
func (e *env) deletePods() {
	ctx := context.Background()
	_ = e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		list, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	e.t.Errorf("pods of %s still there 90s after their deletion", e.ns)
}

// vkProcess is a running sluice-vk.
type vkProcess struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func (e *env) startVK() *vkProcess {
	e.t.Helper()
	bin := buildVK(e.t)
	logFile := filepath.Join(e.t.TempDir(), fmt.Sprintf("vk-%d.log", time.Now().UnixNano()))
	f, err := os.Create(logFile)
	if err != nil {
		e.t.Fatal(err)
	}
	args := append([]string{"--config", e.cfgFile, "--kubeconfig", e.kubeconfig, "--log-level", "info"}, e.vkArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start sluice-vk: %v", err)
	}
	p := &vkProcess{cmd: cmd, done: make(chan error, 1), log: logFile}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p
}

// stop ends the virtual kubelet with SIGTERM (SIGKILL after 20s) and logs its output.
func (p *vkProcess) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("sluice-vk did not stop within 20s of SIGTERM")
	}
	p.dumpLog(t)
}

// kill ends the virtual kubelet with SIGKILL, as a crash would.
func (p *vkProcess) kill(t *testing.T) {
	_ = p.cmd.Process.Kill()
	<-p.done
	p.dumpLog(t)
}

func (p *vkProcess) dumpLog(t *testing.T) {
	f, err := os.Open(p.log)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); !strings.Contains(line, "level=DEBUG") {
			t.Logf("sluice-vk: %s", line)
		}
	}
}

// pod is a pod for the test's node running script in the rig's busybox image.
func (e *env) pod(name, script string) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			// the busybox image has no /var/run/secrets mount point
			AutomountServiceAccountToken: &no,
			NodeSelector:                 map[string]string{"kubernetes.io/hostname": e.node},
			Tolerations: []corev1.Toleration{{
				Key: "virtual-kubelet.io/provider", Operator: corev1.TolerationOpEqual, Value: "sluice", Effect: corev1.TaintEffectNoSchedule,
			}},
			Containers: []corev1.Container{{Name: "main", Image: e.image, Command: []string{"sh", "-c", script}}},
		},
	}
}

func (e *env) create(pod *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	got, err := e.client.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	return got
}

// waitPod polls the pod until cond holds.
func (e *env) waitPod(name, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	var last *corev1.Pod
	deadline := time.Now().Add(timeout)
	for {
		p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		if time.Now().After(deadline) {
			if last == nil {
				e.t.Fatalf("timed out after %s waiting for pod %s: %s (never read: %v)", timeout, name, what, err)
			}
			e.t.Fatalf("timed out after %s waiting for pod %s: %s; last seen %s, reason %q, message %q",
				timeout, name, what, last.Status.Phase, last.Status.Reason, last.Status.Message)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func phaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == phase }
}

func (e *env) waitFor(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// events are the reasons and messages of the pod's Events, "Reason: message".
func (e *env) events(pod *corev1.Pod) []string {
	e.t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
	})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}

// waitEvent waits for an Event of the pod containing want.
func (e *env) waitEvent(pod *corev1.Pod, want string) {
	e.t.Helper()
	e.waitFor("event "+want, 30*time.Second, func() bool {
		for _, ev := range e.events(pod) {
			if strings.Contains(ev, want) {
				return true
			}
		}
		return false
	})
}

// jobID is the Slurm job ID of a pod, from its container ID (slurm://ID/name).
func jobID(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if id, ok := strings.CutPrefix(cs.ContainerID, "slurm://"); ok {
			return strings.Split(id, "/")[0]
		}
	}
	return ""
}

// squeue lists the jobs named name, in every state, as alice: "ID STATE" lines.
func (e *env) squeue(name string) []string {
	e.t.Helper()
	out, err := e.site.Run(context.Background(), nil, "squeue", "-h", "-t", "all", "--name="+name, "-o", "%i %T")
	if err != nil {
		e.t.Fatalf("squeue: %v", err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), " ", "_"))
}
