//go:build rig

package hostnode_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/test/hostnode"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const progImage = "rig.test/podprog:latest"

// rigNode is a host node started for one test, with its cluster.
type rigNode struct {
	client   kubernetes.Interface
	node     *hostnode.Node
	ns       string
	hosts    string // the node's hosts map file
	stateDir string
}

func TestHostNodeOnRig(t *testing.T) {
	r := testrig.Load(t)
	rc, err := clientcmd.BuildConfigFromFlags("", r.Get(t, "RIG_KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		testrig.Unavailable(t, "the rig's API server does not answer: "+err.Error())
	}
	mountsBefore := readFile(t, "/proc/self/mountinfo")
	prog := buildProg(t)
	echoAddr := tcpEcho(t)
	suffix := randomSuffix(t)
	rn := &rigNode{client: client, ns: "hostnode-test-" + suffix, hosts: filepath.Join(t.TempDir(), "hosts"), stateDir: t.TempDir()}
	rn.makeNamespace(t)

	ctx, cancel := context.WithCancel(context.Background())
	logs := &testLog{t: t}
	rn.node, err = hostnode.Start(ctx, hostnode.Options{
		NodeName: "hostnode-test-" + suffix, RestConfig: rc,
		Images:   map[string]string{progImage: prog},
		Backends: map[hostnode.ServicePortKey]string{{Namespace: rn.ns, Name: "static", Port: 40100}: echoAddr},
		StateDir: rn.stateDir, HostsFile: rn.hosts, MaxBackoff: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		cancel()
		rn.client.CoreV1().Namespaces().Delete(context.Background(), rn.ns, metav1.DeleteOptions{})
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// the node deletes the namespace's pods before it stops
		rn.client.CoreV1().Namespaces().Delete(context.Background(), rn.ns, metav1.DeleteOptions{})
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			pods, err := rn.client.CoreV1().Pods(rn.ns).List(context.Background(), metav1.ListOptions{})
			if err == nil && len(pods.Items) == 0 {
				break
			}
		}
		cancel()
		if err := rn.node.Wait(); err != nil {
			t.Errorf("host node stopped with %v", err)
		}
		logs.close()
		client.CoreV1().Nodes().Delete(context.Background(), rn.node.Name(), metav1.DeleteOptions{})
		if after := readFile(t, "/proc/self/mountinfo"); after != mountsBefore {
			t.Errorf("the host's mounts changed:\nbefore\n%s\nafter\n%s", mountsBefore, after)
		}
	})
	// the node lifecycle controller lifts its not-ready taint once it sees the node Ready
	eventually(t, 60*time.Second, "the node Ready and untainted", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, rn.node.Name(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n) && len(n.Spec.Taints) == 0 && n.Status.Addresses[0].Address == "127.0.0.1",
			fmt.Sprintf("ready %v, taints %v, addresses %v", nodeReady(n), n.Spec.Taints, n.Status.Addresses)
	})

	rn.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greeting"}, Data: map[string]string{"greeting": "hello 1"}})
	rn.create(t, service("echo", map[string]string{"app": "echo"}, 8080, intstr.FromInt32(8080)))
	rn.create(t, service("peer", map[string]string{"app": "peer"}, 80, intstr.FromString("http")))
	rn.create(t, service("static", nil, 40100, intstr.FromInt32(40100)))
	rn.create(t, rn.deployment("echo", true))
	rn.create(t, rn.deployment("peer", false))

	echo := rn.waitRunning(t, "app=echo", func(p *corev1.Pod) bool { return podReady(p) })
	peer := rn.waitRunning(t, "app=peer", func(p *corev1.Pod) bool { return podReady(p) })
	ip := netip.MustParseAddr(echo.Status.PodIP)
	if !netip.MustParsePrefix("127.80.0.0/16").Contains(ip) || echo.Status.HostIP != "127.0.0.1" {
		t.Errorf("pod IP %s, host IP %s; want 127.80.X.Y and 127.0.0.1", ip, echo.Status.HostIP)
	}
	echoURL := "http://" + rn.serviceAddr(t, "echo", 8080)

	t.Run("ConfigMap volume and env", func(t *testing.T) {
		if got := get(t, echoURL+"/file?path=/etc/hostnode-test/config/greeting"); got != "hello 1" {
			t.Errorf("mounted ConfigMap through the Service: %q; want %q", got, "hello 1")
		}
		for k, want := range map[string]string{"GREETING": "hello 1", "POD_IP": echo.Status.PodIP, "POD_NAME": echo.Name, "HOSTNAME": echo.Name} {
			if got := get(t, echoURL+"/env?name="+k); got != want {
				t.Errorf("env %s = %q; want %q", k, got, want)
			}
		}
		cm, err := rn.client.CoreV1().ConfigMaps(rn.ns).Get(context.Background(), "greeting", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["greeting"] = "hello 2"
		if _, err := rn.client.CoreV1().ConfigMaps(rn.ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the mounted ConfigMap to change", func() (bool, string) {
			got := get(t, echoURL+"/file?path=/etc/hostnode-test/config/greeting")
			return got == "hello 2", got
		})
	})

	t.Run("Service names in the process's /etc/hosts", func(t *testing.T) {
		for _, addr := range []string{"peer." + rn.ns + ":80", "peer:80", "peer." + rn.ns + ".svc.cluster.local:80"} {
			if got := get(t, echoURL+"/dial?addr="+url.QueryEscape(addr)); got != "peer" {
				t.Errorf("the echo pod dialing %s reached %q; want the peer pod", addr, got)
			}
		}
		hosts := get(t, echoURL+"/file?path=/etc/hosts")
		if !strings.Contains(hosts, "\t"+echo.Name+"\n") || !strings.Contains(hosts, "127.0.0.1\tlocalhost") {
			t.Errorf("the pod's /etc/hosts lacks its own name or localhost:\n%s", hosts)
		}
		if host := readFile(t, "/etc/hosts"); strings.Contains(host, "svc.cluster.local") {
			t.Errorf("the host's /etc/hosts got Service names:\n%s", host)
		}
		if m := readFile(t, rn.hosts); !strings.Contains(m, "\techo."+rn.ns+".svc.cluster.local\t") {
			t.Errorf("the hosts map file lacks the echo Service:\n%s", m)
		}
		// a Service made now reaches the running process's /etc/hosts
		rn.create(t, service("late", map[string]string{"app": "none"}, 9999, intstr.FromInt32(9999)))
		eventually(t, 30*time.Second, "the new Service in the pod's /etc/hosts", func() (bool, string) {
			h := get(t, echoURL+"/file?path=/etc/hosts")
			return strings.Contains(h, "\tlate."+rn.ns+"\tlate\n"), h
		})
		// the peer pod has the default service account token volume
		if got := get(t, "http://"+net.JoinHostPort(peer.Status.PodIP, "8080")+"/file?path=/var/run/secrets/kubernetes.io/serviceaccount/namespace"); got != rn.ns {
			t.Errorf("projected service account volume: namespace %q; want %q", got, rn.ns)
		}
	})

	t.Run("selectorless Service with a static backend", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", rn.serviceAddr(t, "static", 40100), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "ping")
		c.(*net.TCPConn).CloseWrite()
		if got, err := io.ReadAll(c); err != nil || string(got) != "ping" {
			t.Errorf("static backend echoed %q, %v; want %q", got, err, "ping")
		}
	})

	t.Run("logs, restart and previous logs", func(t *testing.T) {
		logs := rn.logs(t, echo.Name, false)
		for _, want := range []string{"started pid=", "name=echo", "env GREETING=hello 1", "a line on stderr"} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
		tail, err := rn.client.CoreV1().Pods(rn.ns).GetLogs(echo.Name, &corev1.PodLogOptions{Container: "app", TailLines: new(int64(1)), Timestamps: true}).DoRaw(context.Background())
		if lines := strings.Split(strings.TrimSuffix(string(tail), "\n"), "\n"); err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], time.Now().UTC().Format("2006-01-02T")) {
			t.Errorf("tailLines=1 with timestamps: %q, %v; want one line with its time", tail, err)
		}
		firstPid := get(t, echoURL+"/pid")
		get(t, echoURL+"/exit?code=3")
		var restarted *corev1.Pod
		eventually(t, 60*time.Second, "the container to restart", func() (bool, string) {
			p, err := rn.client.CoreV1().Pods(rn.ns).Get(context.Background(), echo.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			restarted = p
			cs := p.Status.ContainerStatuses[0]
			return cs.RestartCount == 1 && cs.State.Running != nil && podReady(p), fmt.Sprintf("restarts %d, state %+v", cs.RestartCount, cs.State)
		})
		last := restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated
		if last == nil || last.ExitCode != 3 || last.Reason != "Error" {
			t.Errorf("last termination %+v; want exit 3, Error", last)
		}
		prev := rn.logs(t, echo.Name, true)
		if !strings.Contains(prev, "started pid="+firstPid+" ") || !strings.Contains(prev, "exiting with 3") {
			t.Errorf("previous logs lack the first run (pid %s):\n%s", firstPid, prev)
		}
		eventually(t, 30*time.Second, "the Service to reach the new process", func() (bool, string) {
			pid, err := tryGet(echoURL + "/pid")
			return err == nil && pid != firstPid, fmt.Sprint(pid, err)
		})
	})

	t.Run("unmapped image", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "unmapped"},
			Spec: corev1.PodSpec{
				NodeName: rn.node.Name(), AutomountServiceAccountToken: new(false),
				Containers: []corev1.Container{{Name: "app", Image: "rig.test/nothing:1"}},
			},
		}
		rn.create(t, pod)
		eventually(t, 30*time.Second, "ErrImagePull", func() (bool, string) {
			p, err := rn.client.CoreV1().Pods(rn.ns).Get(context.Background(), "unmapped", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "ErrImagePull" && p.Status.Phase == corev1.PodPending, fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
		})
		eventually(t, 30*time.Second, "an Event on the pod", func() (bool, string) {
			evs, err := rn.client.CoreV1().Events(rn.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=unmapped"})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "rig.test/nothing:1") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs.Items))
		})
	})

	t.Run("deletion stops the process", func(t *testing.T) {
		pid, err := strconv.Atoi(get(t, echoURL+"/pid"))
		if err != nil {
			t.Fatal(err)
		}
		cur, err := rn.client.CoreV1().Pods(rn.ns).Get(context.Background(), echo.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podDir := filepath.Join(rn.stateDir, "pods", string(cur.UID))
		if _, err := os.Stat(podDir); err != nil {
			t.Fatalf("pod directory: %v", err)
		}
		if err := rn.client.AppsV1().Deployments(rn.ns).Delete(context.Background(), "echo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// well within the 30 s grace: the node removes a pod once its processes ended
		eventually(t, 15*time.Second, "the pod to be gone", func() (bool, string) {
			p, err := rn.client.CoreV1().Pods(rn.ns).Get(context.Background(), echo.Name, metav1.GetOptions{})
			if err != nil {
				return apierrors.IsNotFound(err), err.Error()
			}
			return false, fmt.Sprintf("deletion at %v, phase %s", p.DeletionTimestamp, p.Status.Phase)
		})
		eventually(t, 10*time.Second, "the process to end", func() (bool, string) {
			err := syscall.Kill(pid, 0)
			return err == syscall.ESRCH, fmt.Sprint(err)
		})
		eventually(t, 10*time.Second, "the pod directory to go", func() (bool, string) {
			_, err := os.Stat(podDir)
			return os.IsNotExist(err), fmt.Sprint(err)
		})
		// no ready pod behind the Service: connections close at once
		c, err := net.DialTimeout("tcp", rn.serviceAddr(t, "echo", 8080), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
			t.Errorf("a Service with no backend: read %d, %v; want the connection closed", n, err)
		}
		c.Close()
	})
}

// makeNamespace makes the test's namespace (the node's clean-up deletes
// it) and waits for its default service account (pods are refused before
// it exists).
func (rn *rigNode) makeNamespace(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := rn.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rn.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the default service account", func() (bool, string) {
		_, err := rn.client.CoreV1().ServiceAccounts(rn.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func (rn *rigNode) create(t *testing.T, obj any) {
	t.Helper()
	ctx, opts := context.Background(), metav1.CreateOptions{}
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = rn.client.CoreV1().ConfigMaps(rn.ns).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = rn.client.CoreV1().Services(rn.ns).Create(ctx, o, opts)
	case *corev1.Pod:
		_, err = rn.client.CoreV1().Pods(rn.ns).Create(ctx, o, opts)
	case *appsv1.Deployment:
		_, err = rn.client.AppsV1().Deployments(rn.ns).Create(ctx, o, opts)
	default:
		t.Fatalf("create %T", obj)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func service(name string, selector map[string]string, port int32, target intstr.IntOrString) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{
			{Name: "tcp", Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP},
		}},
	}
}

// deployment runs the test program on the node; the echo pod mounts the
// greeting ConfigMap and has no token, the peer pod keeps the default
// service account volume.
func (rn *rigNode) deployment(name string, echo bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	c := corev1.Container{
		Name: "app", Image: progImage,
		Args:  []string{"--listen=$(POD_IP):8080", "--name=" + name},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
	}
	spec := corev1.PodSpec{
		NodeSelector:                  map[string]string{"kubernetes.io/hostname": rn.node.Name()},
		TerminationGracePeriodSeconds: new(int64(30)),
	}
	if echo {
		c.Env = append(c.Env, corev1.EnvVar{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "greeting"}, Key: "greeting"}}})
		c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/hostnode-test/config"}}
		spec.AutomountServiceAccountToken = new(false)
		spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "greeting"}}}}}
	}
	spec.Containers = []corev1.Container{c}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// waitRunning waits for the one pod of the selector to be Running and ok.
func (rn *rigNode) waitRunning(t *testing.T, selector string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, 90*time.Second, "a Running pod of "+selector, func() (bool, string) {
		pods, err := rn.client.CoreV1().Pods(rn.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprint(err, " ", len(pods.Items), " pods")
		}
		pod = &pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning && ok(pod), fmt.Sprintf("phase %s, %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	if pod.Spec.NodeName != rn.node.Name() {
		t.Fatalf("pod on node %s; want %s", pod.Spec.NodeName, rn.node.Name())
	}
	return pod
}

// serviceAddr is the proxy address of a Service port.
func (rn *rigNode) serviceAddr(t *testing.T, name string, port int) string {
	t.Helper()
	svc, err := rn.client.CoreV1().Services(rn.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := hostnode.ServiceAddr(netip.MustParseAddr(svc.Spec.ClusterIP))
	if !ok {
		t.Fatalf("Service %s: cluster IP %s is outside 10.96.0.0/16", name, svc.Spec.ClusterIP)
	}
	return net.JoinHostPort(addr.String(), strconv.Itoa(port))
}

// logs reads a pod's logs through the API server and the kubelet API.
func (rn *rigNode) logs(t *testing.T, pod string, previous bool) string {
	t.Helper()
	var out string
	eventually(t, 30*time.Second, "the pod's logs", func() (bool, string) {
		b, err := rn.client.CoreV1().Pods(rn.ns).GetLogs(pod, &corev1.PodLogOptions{Container: "app", Previous: previous}).DoRaw(context.Background())
		out = string(b)
		return err == nil && strings.Contains(out, "started pid="), fmt.Sprint(err, " ", out)
	})
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// buildProg builds the test program, statically (its resolver reads
// /etc/hosts itself).
func buildProg(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "podprog")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/podprog")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test program: %v\n%s", err, b)
	}
	return out
}

// tcpEcho echoes each connection until the client half-closes.
func tcpEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tryGet(u string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", res.Status, bytes.TrimSpace(b))
	}
	return string(b), err
}

// get fetches u, retrying for a while (a Service may be between backends).
func get(t *testing.T, u string) string {
	t.Helper()
	var out string
	eventually(t, 20*time.Second, "GET "+u, func() (bool, string) {
		var err error
		out, err = tryGet(u)
		return err == nil, fmt.Sprint(err)
	})
	return out
}

// eventually polls cond until it holds, failing with its last word.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
		}
		<-tick.C
	}
}

// testLog passes the node's log to t.Logf until the test ends.
type testLog struct {
	t      *testing.T
	mu     sync.Mutex
	closed bool
}

func (l *testLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Logf("hostnode: %s", bytes.TrimSpace(b))
	}
	return len(b), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}
