//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// release is the chart installed on the rig: sluice-vk running in a pod of
// the rig's node, with exactly the chart's rights.
type release struct {
	e       *env
	helm    string
	name    string
	ns      string // the release's namespace, where sluice-vk runs
	helmEnv []string
	// uninstalled: the test uninstalled the release itself
	uninstalled bool
}

// repoRoot is the repository's root.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// helmBinary builds helm from its Go module when missing (hack/tools/build.sh).
func helmBinary(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "tools", "build.sh"), "helm")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/tools/build.sh helm: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// installChart pushes the sluice-vk and sluice-tunnel images of the tests'
// version and the chart to the rig's registry (once per test binary) and
// installs the chart from there (helm install oci://…) into a namespace of
// its own, the node's containerd pulling the images with imagePullSecrets
// (a pull Secret in the release's namespace and in the shadows'), for a node confined to the tenant namespace e.ns
// with forward and reverse tunnels (not confined when confined is false:
// shadows in <namespace>-shadow); extra is appended to the values file.
// Cleanup deletes the tenant's pods while sluice-vk runs, uninstalls the
// release, and deletes the node and both namespaces.
func installChart(t *testing.T, confined bool, extra string) *release {
	t.Helper()
	return installChartWith(t, confined, extra, nil)
}

// installChartWith is installChart with before run once the namespaces
// exist, before helm install.
func installChartWith(t *testing.T, confined bool, extra string, before func(r *release)) *release {
	t.Helper()
	return installChartAs(t, alice(t), confined, extra, before)
}

// siteAccount is the site account a release's jobs run as.
type siteAccount struct {
	user     string
	key      string // the private key's file
	dataRoot string // Site.DataRoot: the account's job directories
}

// alice is the rig's site account, whose key the cluster holds.
func alice(t *testing.T) siteAccount {
	rig := testrig.Load(t)
	return siteAccount{user: rig.Get(t, "RIG_USER"), key: rig.Get(t, "RIG_KEY"), dataRoot: rig.Get(t, "RIG_DATA_ROOT")}
}

// installChartAs is installChartWith for a release whose jobs run as the
// site account acct.
func installChartAs(t *testing.T, acct siteAccount, confined bool, extra string, before func(r *release)) *release {
	t.Helper()
	rig, kubeconfig, client := rigCluster(t)
	if _, ok := lookup("RIG_K8S_CONTAINERD_SOCK"); !ok {
		testrig.Unavailable(t, "the rig has no real node (RIG_K8S_CONTAINERD_SOCK missing from rig.env)")
	}
	s := suffix()
	e := &env{t: t, rig: rig, client: client, kubeconfig: kubeconfig,
		node: "e2e-helm-" + s, ns: "e2e-" + s, image: rig.Get(t, "RIG_IMAGE")}
	home := t.TempDir()
	r := &release{e: e, helm: helmBinary(t), name: "sluice-" + s, ns: "sluice-" + s,
		helmEnv: append(os.Environ(), "KUBECONFIG="+kubeconfig,
			"HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)}
	reg := pushRelease(t, rig, r.helm)

	ctx := context.Background()
	for _, ns := range []string{r.ns, e.ns} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	reg.createPullSecret(t, client, r.ns)
	approveKubeletCSRs(t, client, e.node, inNamespace(r.ns))
	// Confined, the shadows live in the tenant namespace, where the site
	// puts their pull Secret. Not confined, they live in <ns>-shadow, which
	// sluice-vk creates and trusts only as its own (no Secret can be put
	// there first): those shadows run the tunnel image imported into the
	// node, pulling nothing.
	tunnel, shadowPull := reg.image("sluice-tunnel"), []string{}
	if confined {
		reg.createPullSecret(t, client, e.ns)
	} else {
		importImage(t, rig, "sluice-tunnel")
		tunnel, shadowPull = tunnelImage, []string{"--set-json", "config.Network.ShadowImagePullSecrets=[]"}
	}
	e.externalRedis()
	t.Cleanup(func() {
		if t.Failed() {
			r.dumpLog()
		}
		if r.uninstalled {
			// nothing: the test checked that nothing is left
		} else if out, err := r.run("uninstall", r.name, "--namespace", r.ns, "--wait", "--timeout", "120s"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
		_ = client.CoreV1().Nodes().Delete(ctx, e.node, metav1.DeleteOptions{})
		for _, ns := range []string{r.ns, e.ns, e.ns + shadow.ShadowSuffix} {
			_ = client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
	})
	t.Cleanup(e.deletePods)

	if before != nil {
		before(r)
	}
	if !strings.Contains(extra, "gateway:") {
		// one replica, asking little: the tests share the rig's one node
		extra += "gateway:\n  replicas: 1\n  resources:\n    requests:\n      cpu: 10m\n      memory: 32Mi\n"
	}
	values := fmt.Sprintf(`config:
  NodeName: %s
  Site:
    DataRoot: %s
    SocketDirRoot: %s
    ContainerRuntime: charliecloud
    PollInterval: 1s
  Network:
    EnableTunnel: true
    SSH:
      LoginHost: %s
      Port: %s
      User: %s
      TunnelImage: %s
      Reverse:
        Enabled: true
image:
  repository: %s
  tag: %s
imagePullSecrets: [{name: %s}]
log:
  format: json
%s`, e.node, acct.dataRoot, rig.Get(t, "RIG_SOCKET_DIR_ROOT"),
		rig.Get(t, "RIG_LOGIN_ADDR"), rig.Get(t, "RIG_LOGIN_PORT"), acct.user,
		tunnel, reg.prefix()+"/sluice-vk", e2eVersion, pullSecret, extra)
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tenant := e.ns
	if !confined {
		tenant = ""
	}
	args := []string{"install", r.name, reg.chart(), "--version", e2eChartVersion, "--namespace", r.ns, "-f", file,
		"--set-file", "credentials.privateKey=" + acct.key,
		"--set-file", "credentials.knownHosts=" + rig.Get(t, "RIG_KNOWN_HOSTS"),
		"--set-file", "credentials.nodeKnownHosts=" + rig.Get(t, "RIG_NODE_KNOWN_HOSTS"),
		"--set-string", "config.Network.TenantNamespace=" + tenant,
		// by digest: the node may hold an earlier run's images under the tag
		"--set-string", "image.digest=" + reg.digests["sluice-vk"],
		"--set-string", "gateway.image.digest=" + reg.digests["sluice-tunnel"]}
	out, err := r.run(append(append(args, shadowPull...), reg.helmFlags()...)...)
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	e.waitFor("the node to be Ready", 120*time.Second, func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		return err == nil && nodeReady(n)
	})
	t.Logf("helm install → node %s Ready in %s", e.node, time.Since(start).Round(100*time.Millisecond))
	e.waitFor("the default service account", 60*time.Second, func() bool {
		_, err := client.CoreV1().ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	return r
}

// checkProbed checks that the kubelet probes sluice-vk's pod vk (startup,
// liveness and readiness on /readyz and /healthz) and found it Ready, with
// no restart: the probes pass on a real node.
func (r *release) checkProbed(vk *corev1.Pod) {
	t := r.e.t
	t.Helper()
	c := vk.Spec.Containers[0]
	if c.StartupProbe == nil || c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Fatalf("sluice-vk's container has probes startup %v, liveness %v, readiness %v; want all three", c.StartupProbe, c.LivenessProbe, c.ReadinessProbe)
	}
	r.e.waitFor("sluice-vk Ready", 60*time.Second, func() bool {
		p := r.vkPod()
		return podReady(p) && p.Status.ContainerStatuses[0].RestartCount == 0
	})
}

// run runs helm with args.
func (r *release) run(args ...string) (string, error) {
	cmd := exec.Command(r.helm, args...)
	cmd.Env = r.helmEnv
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// vkPods are sluice-vk's pods.
func (r *release) vkPods() []corev1.Pod {
	r.e.t.Helper()
	list, err := r.e.client.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{
		// not the gateway's pods, nor helm test's doctor Pod
		LabelSelector: "app.kubernetes.io/name=sluice,app.kubernetes.io/instance=" + r.name + ",app.kubernetes.io/component!=doctor",
	})
	if err != nil {
		r.e.t.Fatalf("sluice-vk's pods: %v", err)
	}
	return list.Items
}

// vkPod is sluice-vk's pod, the one replica.
func (r *release) vkPod() *corev1.Pod {
	r.e.t.Helper()
	pods := r.vkPods()
	if len(pods) != 1 {
		r.e.t.Fatalf("sluice-vk's pod: %d pods; want 1", len(pods))
	}
	return &pods[0]
}

// logLine is one line of sluice-vk's JSON log.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Error string `json:"error"`
	raw   string
}

// log returns sluice-vk's log, read from the rig's node through the API
// server, one JSON object a line.
func (r *release) log() []logLine {
	r.e.t.Helper()
	return r.podLog(r.vkPod().Name, false)
}

// podLog returns the log of sluice-vk's pod name (of its previous
// container when previous is set).
func (r *release) podLog(name string, previous bool) []logLine {
	r.e.t.Helper()
	b, err := r.e.client.CoreV1().Pods(r.ns).GetLogs(name, &corev1.PodLogOptions{Previous: previous}).DoRaw(context.Background())
	if err != nil {
		r.e.t.Fatalf("sluice-vk's log: %v", err)
	}
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			r.e.t.Errorf("sluice-vk's log: a line that is not JSON: %q", sc.Text())
			continue
		}
		l.raw = sc.Text()
		out = append(out, l)
	}
	return out
}

func (r *release) dumpLog() {
	for _, p := range append(r.vkPods(), r.gatewayPods()...) {
		for _, l := range r.podLog(p.Name, false) {
			if l.Level != "DEBUG" {
				r.e.t.Logf("%s: %s", p.Name, l.raw)
			}
		}
	}
	r.e.dumpPodLogs()
}

// dumpPodLogs logs the tail of every container of the shadow pods and of
// the offloaded pods of the test's node (their jobs' output), for a
// failure's reader.
func (e *env) dumpPodLogs() {
	ctx := context.Background()
	tail := int64(40)
	for _, ns := range []string{e.ns, e.ns + shadow.ShadowSuffix} {
		list, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range list.Items {
			_, shadowed := p.Labels[shadow.LabelShadow]
			if !shadowed && p.Spec.NodeName != e.node {
				continue
			}
			for _, c := range p.Spec.Containers {
				b, err := e.client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(ctx)
				if err != nil {
					e.t.Logf("%s/%s %s: no log: %v", ns, p.Name, c.Name, err)
					continue
				}
				for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
					e.t.Logf("%s/%s %s: %s", ns, p.Name, c.Name, l)
				}
			}
		}
	}
}

// forbidden returns the log lines that say the API server refused a call.
func forbidden(lines []logLine) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l.raw, "forbidden") {
			out = append(out, l.raw)
		}
	}
	return out
}

// TestHelmInstallConfined: `helm install` of charts/sluice for a node
// confined to a tenant namespace; sluice-vk runs in the cluster with exactly
// the chart's rights. Its node advertises the pod's IP; a pod runs to
// Succeeded and its log is read through the API server from the in-cluster
// kubelet API; a pod with forward and reverse tunnels gets its shadow in the
// tenant namespace, reaches Redis and is reached through the shadow; a pod of
// another namespace is refused; no call is refused by RBAC. Then, with the
// tenant Role's binding removed, the shadow of a new pod cannot be made and
// sluice-vk says so in its log, loudly. The chart's admission policies are
// on: none of these calls is refused by them either.
func TestHelmInstallConfined(t *testing.T) {
	r := installChart(t, true, "admissionPolicy:\n  enabled: true\n")
	e := r.e
	ctx := context.Background()

	vk := r.vkPod()
	r.checkProbed(vk)
	n, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var internal string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if internal == "" || internal != vk.Status.PodIP {
		t.Errorf("node InternalIP %q; want sluice-vk's pod IP %s", internal, vk.Status.PodIP)
	}

	// a pod to Succeeded, its log from the in-cluster kubelet API
	e.create(e.pod("hello", "echo hello from slurm on $(hostname)"))
	e.waitPod("hello", "Succeeded", 120*time.Second, phaseIs(corev1.PodSucceeded))
	b, err := e.client.CoreV1().Pods(e.ns).GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(b), "hello from slurm on") {
		t.Fatalf("logs of hello: %q, %v; want its output through %s:10250", b, err, vk.Status.PodIP)
	}
	t.Logf("kubectl logs hello (through sluice-vk at %s): %q", vk.Status.PodIP, strings.TrimSpace(string(b)))

	// helm test: sluice-vk doctor, in a pod with the release's
	// configuration and credentials, checks the site
	start := time.Now()
	out, err := r.run("test", r.name, "--namespace", r.ns, "--timeout", "4m")
	if err != nil || !strings.Contains(out, "Succeeded") {
		t.Errorf("helm test: %v\n%s", err, out)
	}
	t.Logf("helm test (sluice-vk doctor against the site) passed in %s", time.Since(start).Round(100*time.Millisecond))

	// forward and reverse tunnels through the gateway, the shadows in the
	// tenant namespace, none holding a connection to the site
	e.runTunnels(e.ns)
	e.reverseOnly(2)
	r.checkGatewayConnections(e.ns)
	r.checkNoSecretOutside()
	if _, err := e.client.CoreV1().Namespaces().Get(ctx, e.ns+shadow.ShadowSuffix, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s%s: %v; want none on a confined node", e.ns, shadow.ShadowSuffix, err)
	}

	// a pod of another namespace is refused
	foreign := e.pod("foreign", "echo should not run")
	foreign.Namespace = r.ns
	if _, err := e.client.CoreV1().Pods(r.ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the foreign pod refused", 60*time.Second, func() bool {
		p, err := e.client.CoreV1().Pods(r.ns).Get(ctx, "foreign", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "SluiceRefused"
	})
	if lines := forbidden(r.log()); len(lines) > 0 {
		t.Errorf("with the chart's rights, sluice-vk was refused %d calls:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// Deleted at once: a graceful delete leaves the finishing delete to the
	// node, and a confined sluice-vk has no right to delete pods in its own
	// namespace, which is what keeps foreign pods out of it.
	_ = e.client.CoreV1().Pods(r.ns).Delete(ctx, "foreign", *metav1.NewDeleteOptions(0))

	// a call outside the rights fails loudly: without the tenant Role the
	// shadow's Deployment cannot be made
	rb, err := e.client.RbacV1().RoleBindings(e.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the tenant RoleBinding: %v", err)
	}
	if err := e.client.RbacV1().RoleBindings(e.ns).Delete(ctx, r.name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the tenant RoleBinding: %v", err)
	}
	defer func() {
		// given back, so that the pods' clean-up can delete what it must
		rb.ResourceVersion, rb.UID = "", ""
		if _, err := e.client.RbacV1().RoleBindings(e.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Errorf("give the tenant RoleBinding back: %v", err)
		}
	}()
	denied := e.pod("denied", "sleep 5")
	denied.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	e.create(denied)
	var loud []string
	e.waitFor("sluice-vk to log the refused call", 60*time.Second, func() bool {
		loud = nil
		for _, l := range r.log() {
			if (l.Level == "WARN" || l.Level == "ERROR") && strings.Contains(l.raw, "forbidden") && strings.Contains(l.raw, e.ns+"/denied") {
				loud = append(loud, l.raw)
			}
		}
		return len(loud) > 0
	})
	t.Logf("sluice-vk without the tenant Role: %s", loud[0])
}

// TestHelmLeaderTakeover: two replicas of sluice-vk with leader election
// (lease 8s, renew 5s, retry 1s); the leader's container is killed
// (SIGKILL, so the Lease is not released) while a pod's job runs. The other
// replica takes the Lease and runs the node: the running pod keeps its job
// (the same ID, adopted), a pod created during the handover runs once, and
// both end Succeeded. The takeover times are logged.
func TestHelmLeaderTakeover(t *testing.T) {
	r := installChart(t, true, `replicas: 2
leaderElection:
  enabled: true
  leaseDuration: 8s
  renewDeadline: 5s
  retryPeriod: 1s
`)
	e := r.e
	ctx := context.Background()
	lease := "sluice-vk-" + e.node
	holder := func() string {
		l, err := e.client.CoordinationV1().Leases(r.ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	// both Ready: the leader with its node registered, the standby
	// knowing its leader (/readyz)
	e.waitFor("two replicas ready", 60*time.Second, func() bool {
		n := 0
		for _, p := range r.vkPods() {
			if podReady(&p) {
				n++
			}
		}
		return n == 2
	})
	leader := holder()
	var container string
	for _, p := range r.vkPods() {
		if strings.HasPrefix(leader, p.Name+"_") && len(p.Status.ContainerStatuses) == 1 {
			container = strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		}
	}
	if container == "" {
		t.Fatalf("the leader %q is none of sluice-vk's running pods", leader)
	}

	e.create(e.pod("long", "echo started; sleep 40; echo finished"))
	job := jobID(e.waitPod("long", "Running", 90*time.Second, phaseIs(corev1.PodRunning)))

	start := time.Now()
	kill := exec.Command("ctr", "--address", e.rig.Get(t, "RIG_K8S_CONTAINERD_SOCK"), "--namespace", "k8s.io",
		"tasks", "kill", "--signal", "SIGKILL", container)
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("kill the leader's container: %v\n%s", err, out)
	}
	e.create(e.pod("during", "echo during the handover"))
	e.waitFor("a new leader", 60*time.Second, func() bool {
		h := holder()
		return h != "" && h != leader
	})
	leased := time.Since(start)
	e.waitPod("during", "Succeeded", 120*time.Second, phaseIs(corev1.PodSucceeded))
	reconciled := time.Since(start)
	done := e.waitPod("long", "Succeeded", 120*time.Second, phaseIs(corev1.PodSucceeded))
	t.Logf("leader %s killed: Lease taken by %s after %s; the pod created meanwhile Succeeded after %s",
		leader, holder(), leased.Round(100*time.Millisecond), reconciled.Round(100*time.Millisecond))

	if got := jobID(done); got != job {
		t.Errorf("pod long: job %s after the takeover; want %s, the job it had", got, job)
	}
	for _, name := range []string{"long", "during"} {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		jobs, submitted := map[string]bool{}, 0
		for _, ev := range e.events(p) {
			reason, msg, _ := strings.Cut(ev, ": ")
			if reason == "Submitted" || reason == "Adopted" {
				f := strings.Fields(msg)
				jobs[f[len(f)-1]] = true
			}
			if reason == "Submitted" {
				submitted++
			}
		}
		if len(jobs) != 1 || submitted != 1 {
			t.Errorf("pod %s: jobs %v, submitted %d times; want one job, submitted once (events %q)", name, jobs, submitted, e.events(p))
		}
	}
	b, err := e.client.CoreV1().Pods(e.ns).GetLogs("long", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || strings.Count(string(b), "finished") != 1 {
		t.Errorf("logs of long: %q, %v; want one run to its end", b, err)
	}
}

// TestHelmInstallCluster: the chart for a node that is not confined: with
// the ClusterRole's rights, sluice-vk makes the shadow namespace, copies
// only the gateway's host keys there, and the pods' forward and reverse
// tunnels work through the gateway, which alone holds connections to the
// login node (at most M+1 for jobs on M nodes); no call is refused by RBAC
// nor by the chart's admission policies (on). helm uninstall deletes the
// copies.
func TestHelmInstallCluster(t *testing.T) {
	r := installChart(t, false, "admissionPolicy:\n  enabled: true\n")
	e := r.e
	e.runTunnels(e.ns + shadow.ShadowSuffix)
	e.reverseOnly(2)
	r.checkGatewayConnections(e.ns + shadow.ShadowSuffix)
	r.checkNoSecretOutside()
	ctx := context.Background()
	if _, err := e.client.CoreV1().ConfigMaps(e.ns+shadow.ShadowSuffix).Get(ctx, r.name+"-gateway-host-keys", metav1.GetOptions{}); err != nil {
		t.Errorf("the gateway's host keys copied into the shadow namespace: %v", err)
	}
	r.checkUpgradeKeepsHostKey()
	if lines := forbidden(r.log()); len(lines) > 0 {
		t.Errorf("with the chart's rights, sluice-vk was refused %d calls:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	// a copy of a credential the chart does not name (the bastion's key, a
	// KeySecret set in config.Network.SSH), marked as sluice-vk marks its
	// copies: the hook derives what it deletes from the marks, not from
	// the chart's names
	marked, err := labels.ConvertSelectorToLabelsMap(shadow.CopySelector)
	if err != nil {
		t.Fatal(err)
	}
	bastionKey := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bastion-key", Labels: marked,
		Annotations: map[string]string{shadow.AnnotationCopyOf: r.ns + "/bastion-key"}}}
	if _, err := e.client.CoreV1().Secrets(e.ns+shadow.ShadowSuffix).Create(ctx, bastionKey, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the bastion key's copy: %v", err)
	}

	// helm uninstall: the hook deletes the copies in the shadow namespace
	out, err := r.run("uninstall", r.name, "--namespace", r.ns, "--wait", "--timeout", "180s")
	r.uninstalled = true
	if err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	copies := metav1.ListOptions{LabelSelector: shadow.CopySelector}
	secrets, err := e.client.CoreV1().Secrets(e.ns+shadow.ShadowSuffix).List(ctx, copies)
	if err != nil || len(secrets.Items) > 0 {
		t.Errorf("credential Secrets copied into %s after helm uninstall: %v, %v; want none", e.ns+shadow.ShadowSuffix, secrets, err)
	}
	maps, err := e.client.CoreV1().ConfigMaps(e.ns+shadow.ShadowSuffix).List(ctx, copies)
	if err != nil || len(maps.Items) > 0 {
		t.Errorf("credential ConfigMaps copied into %s after helm uninstall: %v, %v; want none", e.ns+shadow.ShadowSuffix, maps, err)
	}
}

// quantile is the q-quantile of ds (nearest rank), rounded to 100 ms.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)].Round(100 * time.Millisecond)
}
