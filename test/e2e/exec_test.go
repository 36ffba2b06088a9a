//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// kubectlBin is the rig's kubectl (hack/tools/build.sh kubectl).
const kubectlBin = "/var/cache/sluice/kubectl-v0.37.2/kubectl"

// kubectl runs the rig's kubectl on the test's namespace and returns its
// output and exit code.
// needKubectl skips the test without the rig's kubectl, and fails it under
// CI, where make test builds it (make kubectl).
func needKubectl(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(kubectlBin); err != nil {
		testrig.Unavailable(t, fmt.Sprintf("no kubectl at %s (make kubectl)", kubectlBin))
	}
}

func (e *env) kubectl(args ...string) (string, int) {
	e.t.Helper()
	needKubectl(e.t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", e.kubeconfig, "-n", e.ns}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", 0
}

// execPod is a running pod with FROM_POD in its container's environment.
func (e *env) execPod(name string) {
	e.t.Helper()
	pod := e.pod(name, "echo started; sleep 600\n")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FROM_POD", Value: "set by the pod"}}
	e.create(pod)
	e.waitPod(name, "running", 120*time.Second, phaseIs(corev1.PodRunning))
}

// TestExecRunsInTheContainer: kubectl exec runs in the job's container with
// its environment, returns the command's exit code, runs an interactive
// shell on a pty that honours a resize, and a user without pods/exec is
// refused.
func TestExecRunsInTheContainer(t *testing.T) {
	parallel(t)
	eachSite(t, execRunsInTheContainer)
}

func execRunsInTheContainer(t *testing.T, on rigSite) {
	e := newStreamEnvOn(t, on.rig)
	e.execPod("ex")

	out, code := e.kubectl("exec", "ex", "--", "cat", "/etc/hosts")
	if code != 0 || !strings.Contains(out, "localhost") {
		t.Errorf("exec cat /etc/hosts: exit %d, %q; want 0 and the container's hosts", code, out)
	}
	out, code = e.kubectl("exec", "ex", "--", "sh", "-c", `echo "$FROM_POD"; echo to-stderr >&2`)
	if code != 0 || !strings.Contains(out, "set by the pod") || !strings.Contains(out, "to-stderr") {
		t.Errorf("exec with the pod's environment: exit %d, %q; want its FROM_POD and stderr", code, out)
	}
	if _, code = e.kubectl("exec", "ex", "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("exec sh -c 'exit 3': exit %d; want 3", code)
	}
	out, code = e.kubectl("exec", "-i", "ex", "--", "wc", "-c")
	if code != 0 || strings.TrimSpace(out) != "0" {
		t.Errorf("exec -i wc -c with no input: exit %d, %q; want 0", code, out)
	}

	// How long an exec takes, end to end (kubectl's own start-up included).
	var took []time.Duration
	for range 10 {
		start := time.Now()
		if _, code := e.kubectl("exec", "ex", "--", "true"); code != 0 {
			t.Fatalf("exec true: exit %d", code)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("kubectl exec -- true over 10 runs: p50 %v, max %v", took[5].Round(time.Millisecond), took[9].Round(time.Millisecond))

	t.Run("tty", func(t *testing.T) {
		rc := e.restConfig()
		// the terminal has kubectl's size from its first line on: the
		// pty is made with it (no wait, no retry)
		in := strings.NewReader("stty size; tty; echo $((6*7))-done; exit 5\n")
		var stdout bytes.Buffer
		err := e.stream(rc, "ex", []string{"sh"}, in, &stdout, true)
		var exit interface{ ExitStatus() int }
		if !errors.As(err, &exit) || exit.ExitStatus() != 5 {
			t.Errorf("interactive shell ended with %v; want exit code 5", err)
		}
		got := stdout.String()
		for _, want := range []string{"33 101", "/dev/pts/", "42-done"} {
			if !strings.Contains(got, want) {
				t.Errorf("interactive shell's output lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		rc := e.onlyPodsGet()
		var stdout bytes.Buffer
		err := e.stream(rc, "ex", []string{"touch", "/tmp/forbidden-exec-ran"}, nil, &stdout, false)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("exec as a user without pods/exec: %v; want forbidden", err)
		}
		if out, code := e.kubectl("exec", "ex", "--", "ls", "/tmp/forbidden-exec-ran"); code == 0 {
			t.Errorf("the refused command ran: %q", out)
		}
	})
}

// sizeQueue gives one terminal size.
type sizeQueue struct{ sent bool }

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if q.sent {
		select {} // no more sizes: the stream ends with the executor
	}
	q.sent = true
	return &remotecommand.TerminalSize{Width: 101, Height: 33}
}

// stream runs cmd in pod's container main with client-go's executor (SPDY).
func (e *env) stream(rc *rest.Config, pod string, cmd []string, in io.Reader, out io.Writer, tty bool) error {
	req := e.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: cmd, Stdin: in != nil, Stdout: true, Stderr: !tty, TTY: tty}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(rc, http.MethodPost, req.URL())
	if err != nil {
		return err
	}
	opts := remotecommand.StreamOptions{Stdin: in, Stdout: out, Tty: tty}
	if !tty {
		opts.Stderr = out
	} else {
		opts.TerminalSizeQueue = &sizeQueue{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, opts)
}

// onlyPodsGet is a client configuration impersonating a user whose Role in
// the namespace allows only get on pods.
func (e *env) onlyPodsGet() *rest.Config {
	e.t.Helper()
	ctx := context.Background()
	user := "viewer-" + e.ns
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods-get"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}
	if _, err := e.client.RbacV1().Roles(e.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create role: %v", err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pods-get"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pods-get"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := e.client.RbacV1().RoleBindings(e.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create role binding: %v", err)
	}
	rc := e.restConfig()
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	return rc
}

// TestExecKilledKubectlLeavesNothing: kubectl killed in the middle of an
// exec session leaves no process of the session on the node.
func TestExecKilledKubectlLeavesNothing(t *testing.T) {
	parallel(t)
	e := newStreamEnv(t)
	e.execPod("kill")
	job := e.jobID("kill")
	marker := fmt.Sprintf("%d", 7000+time.Now().UnixNano()%1000)
	needKubectl(t)
	for _, stdinOpen := range []bool{false, true} {
		args := []string{"--kubeconfig", e.kubeconfig, "-n", e.ns, "exec", "kill", "--", "sleep", marker}
		if stdinOpen {
			args = []string{"--kubeconfig", e.kubeconfig, "-n", e.ns, "exec", "-i", "kill", "--", "sleep", marker}
		}
		cmd := exec.Command(kubectlBin, args...)
		cmd.Stdin = strings.NewReader("") // -i with an open input
		if stdinOpen {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd.Stdin = r
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e.waitFor("the exec's sleep on the node", 30*time.Second, func() bool { return len(nodeProcs(t, "sleep "+marker)) > 0 })
		t.Logf("stdin open %v: session on the node: %v, steps %v", stdinOpen, nodeProcs(t, marker), e.execSteps(job))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		killed := time.Now()
		e.waitFor("no process of the session on the node", 20*time.Second, func() bool { return len(nodeProcs(t, marker)) == 0 })
		e.waitFor("no step of the session in Slurm", 20*time.Second, func() bool { return len(e.execSteps(job)) == 0 })
		t.Logf("stdin open %v: the node was clean %v after kubectl was killed", stdinOpen, time.Since(killed).Round(100*time.Millisecond))
	}
}

// jobID is the Slurm job of a pod, from its container ID slurm://JOB/NAME.
func (e *env) jobID(name string) string {
	e.t.Helper()
	p := e.waitPod(name, "a container ID", 30*time.Second, func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].ContainerID != ""
	})
	id, _, _ := strings.Cut(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "slurm://"), "/")
	return id
}

// execSteps lists the steps of job other than its batch and extern steps.
func (e *env) execSteps(job string) []string {
	e.t.Helper()
	out, err := e.site.Run(context.Background(), nil, "squeue", "-h", "-s", "-j", job, "-o", "%i")
	if err != nil {
		e.t.Fatalf("squeue -s: %v", err)
	}
	var steps []string
	for _, s := range strings.Fields(string(out)) {
		if !strings.HasSuffix(s, ".batch") && !strings.HasSuffix(s, ".extern") {
			steps = append(steps, s)
		}
	}
	return steps
}

// nodeProcs lists the processes in the rig's node whose command line holds
// s.
func nodeProcs(t *testing.T, s string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", nodeNetns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", nodeNetns, err)
	}
	var found []string
	for _, pid := range strings.Fields(string(out)) {
		b, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(line, s) {
			found = append(found, pid+": "+line)
		}
	}
	return found
}

// TestExecSeesTheReverseTunnelsNames: in a pod with reverse forwards, exec
// sees the container's /etc/hosts, the names mapped to the relay, not the
// node's.
func TestExecSeesTheReverseTunnelsNames(t *testing.T) {
	parallel(t)
	keys := testrig.Load(t).Get(t, "RIG_NODE_KNOWN_HOSTS")
	e := newTunnelEnv(t, tunnelOpts{ssh: "    NodeKnownHostsFile: " + keys + "\n"})
	e.create(e.reversePod("rev"))
	e.waitFor("the job's first tick through the tunnel", 180*time.Second, func() bool { return len(e.ticks("rev")) > 0 })
	out, code := e.kubectl("exec", "rev", "--", "cat", "/etc/hosts")
	if code != 0 || !strings.Contains(out, "# sluice: the reverse tunnel") || !regexp.MustCompile(`(?m)^127\.\S+ redis$`).MatchString(out) {
		t.Errorf("exec cat /etc/hosts: exit %d:\n%s\nwant the hosts copy mapping redis to the relay", code, out)
	}
}
