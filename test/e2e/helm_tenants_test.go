//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// tenant is one release of TestHelmTenants with its running pod.
type tenant struct {
	r    *release
	acct siteAccount
	port int         // the job's HTTP server, on the node's loopback
	pod  *corev1.Pod // "tunnels", running
	svc  *corev1.Service
	user kubernetes.Interface // the tenant's user: edit in its namespace only
}

// TestHelmTenants: two releases side by side, one a tenant, each in a
// namespace of its own with a node confined to the tenant's namespace and
// jobs running as a site account of its own (alice, bob), both running a
// tunnelled pod at once. Each check is made both ways, so that it can
// fail: tenant A's user cannot get, exec into or read the logs of B's pod,
// nor get B's shadow or list B's Secrets, while B's user can; a step of
// A's job cannot read B's job directory, while one of B's can; B's gateway
// refuses A's shadow's token and accepts B's; A's gateway carries A's
// port and not B's. Uninstalling A leaves B's pod running, its forward
// and reverse tunnels carrying.
func TestHelmTenants(t *testing.T) {
	parallel(t)
	rig := testrig.Load(t)
	bob := siteAccount{user: rig.Get(t, "RIG_OTHER_USER"), key: rig.Get(t, "RIG_OTHER_KEY"),
		dataRoot: filepath.Join("/home", rig.Get(t, "RIG_OTHER_USER"), ".sluice")}
	a := &tenant{acct: alice(t), port: freeNodePortE2E(t)}
	b := &tenant{acct: bob, port: freeNodePortE2E(t)}
	a.r = installChartAs(t, a.acct, true, "", nil)
	b.r = installChartAs(t, b.acct, true, "", nil)
	for a.port == b.port {
		b.port = freeNodePortE2E(t)
	}
	// B's job keeps asking Redis through its reverse tunnel
	b.pod, b.svc = b.r.e.runTunnelsAt(b.r.e.ns, b.port, `while :; do
	out=$(printf 'PING\r\n' | busybox nc redis.default 6379)
	echo "again $out"
	sleep 2
done
`)
	a.pod, a.svc = a.r.e.runTunnelsAt(a.r.e.ns, a.port, "sleep 300\n")
	a.user, b.user = a.editor(), b.editor()

	// the API: B's pod, shadow and Secrets, by A's user and by B's
	for _, c := range []struct {
		who   string
		user  kubernetes.Interface
		allow bool
	}{{"tenant A's user", a.user, false}, {"tenant B's user", b.user, true}} {
		for what, err := range b.reach(c.user) {
			if denied := apierrors.IsForbidden(err); denied == c.allow {
				t.Errorf("%s: %s of tenant B: %v; want allowed %v", c.who, what, err, c.allow)
			}
		}
	}

	// the site: a step of A's job (as alice) and one of B's (as bob) read
	// B's job script
	bDir := filepath.Join(bob.dataRoot, b.pod.Namespace+"-"+string(b.pod.UID))
	if out, err := jobStep(t, a, "cat", filepath.Join(bDir, "job.sh")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("a step of A's job read B's job script: %v\n%s", err, out)
	}
	if out, err := jobStep(t, a, "ls", bob.dataRoot); err == nil {
		t.Errorf("a step of A's job listed B's job directories: %s", out)
	}
	if out, err := jobStep(t, b, "cat", filepath.Join(bDir, "job.sh")); err != nil || !strings.Contains(out, "#!") {
		t.Errorf("a step of B's job reading its own job script: %v\n%s", err, out)
	}

	// the gateways: a shadow's token proves its own pod to its own gateway
	aToken := shadowToken(t, a)
	bToken := shadowToken(t, b)
	if c, err := b.dialGateway(aToken); err == nil {
		c.Close()
		t.Errorf("B's gateway accepted the token of A's shadow")
	}
	if c, err := b.dialGateway(bToken); err != nil {
		t.Errorf("B's gateway refused B's shadow: %v", err)
	} else {
		c.Close()
	}
	ac, err := a.dialGateway(aToken)
	if err != nil {
		t.Fatalf("A's gateway refused A's shadow: %v", err)
	}
	if conn, err := ac.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))); err == nil {
		conn.Close()
		t.Errorf("A's gateway carried A's shadow to B's port %d", b.port)
	}
	if body, err := getOver(ac, a.port); err != nil || !strings.Contains(body, "redis.default") {
		t.Errorf("A's gateway carrying A's own port %d: %v, %q", a.port, err, firstLine(body))
	}
	ac.Close()

	// uninstalling A leaves B running, its tunnels carrying both ways
	before := strings.Count(b.log(), "again +PONG")
	if out, err := a.r.run("uninstall", a.r.name, "--namespace", a.r.ns, "--wait", "--timeout", "120s"); err != nil {
		t.Fatalf("helm uninstall A: %v\n%s", err, out)
	}
	a.r.uninstalled = true
	if _, err := a.r.e.client.CoreV1().Nodes().Get(context.Background(), a.r.e.node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("A's node after uninstall: %v; want it gone", err)
	}
	b.r.e.waitFor("B's reverse tunnel to answer after A's uninstall", 60*time.Second, func() bool {
		return strings.Count(b.log(), "again +PONG") > before+1
	})
	if body, err := httpGet(serviceAddr(t, b.svc, b.port), "/hosts"); err != nil || !strings.Contains(body, "redis.default") {
		t.Errorf("B's forward tunnel after A's uninstall: %v, %q", err, firstLine(body))
	}
	p, err := b.r.e.client.CoreV1().Pods(b.pod.Namespace).Get(context.Background(), b.pod.Name, metav1.GetOptions{})
	if err != nil || p.Status.Phase != corev1.PodRunning || p.UID != b.pod.UID {
		t.Errorf("B's pod after A's uninstall: %v; want the same pod Running", err)
	}
}

// editor makes the ServiceAccount "tenant-user" with the edit role in the
// tenant's namespace only, and returns a client acting as it.
func (tn *tenant) editor() kubernetes.Interface {
	e := tn.r.e
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant-user"}}
	if _, err := e.client.CoreV1().ServiceAccounts(e.ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create service account %s/tenant-user: %v", e.ns, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-user-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: e.ns}},
	}
	if _, err := e.client.RbacV1().RoleBindings(e.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("bind edit in %s: %v", e.ns, err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		e.t.Fatalf("kubeconfig: %v", err)
	}
	rc.Impersonate.UserName = "system:serviceaccount:" + e.ns + ":" + sa.Name
	rc.Impersonate.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + e.ns, "system:authenticated"}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		e.t.Fatalf("client as %s: %v", rc.Impersonate.UserName, err)
	}
	// the binding takes effect when the authorizer's cache sees it
	e.waitFor("the edit binding in effect", 30*time.Second, func() bool {
		_, err := c.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	return c
}

// reach tries, as user, what a tenant's user does with the tenant's pod,
// shadow and Secrets, and returns each answer's error by what was tried.
// An exec that passes authorisation ends in an upgrade error, not nil.
func (tn *tenant) reach(user kubernetes.Interface) map[string]error {
	ctx := context.Background()
	ns, name := tn.pod.Namespace, tn.pod.Name
	_, getErr := user.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	_, logErr := user.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	execErr := user.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(name).SubResource("exec").
		Param("container", "main").Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	if execErr != nil && apierrors.IsNotFound(execErr) {
		execErr = fmt.Errorf("exec: pod not found: %w", execErr)
	}
	_, shadowErr := user.AppsV1().Deployments(ns).Get(ctx, shadow.Name(tn.pod), metav1.GetOptions{})
	_, secretErr := user.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	return map[string]error{"get the pod": getErr, "the pod's logs": logErr, "exec into the pod": execErr,
		"get the shadow": shadowErr, "list the Secrets": secretErr}
}

// log is the tenant's pod's log, through its sluice-vk.
func (tn *tenant) log() string {
	b, _ := tn.r.e.client.CoreV1().Pods(tn.pod.Namespace).GetLogs(tn.pod.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	return string(b)
}

// jobStep runs argv as a step of the tenant's job, as the job's user
// (srun --overlap from the login node), and returns its output.
func jobStep(t *testing.T, tn *tenant, argv ...string) (string, error) {
	t.Helper()
	dir := filepath.Join(tn.acct.dataRoot, tn.pod.Namespace+"-"+string(tn.pod.UID))
	id, err := os.ReadFile(filepath.Join(dir, "job.id"))
	if err != nil {
		t.Fatalf("the job of %s/%s: %v", tn.pod.Namespace, tn.pod.Name, err)
	}
	args := append([]string{"netns", "exec", loginNetns, "runuser", "-u", tn.acct.user, "--",
		"srun", "--jobid", strings.TrimSpace(string(id)), "--overlap", "-w", tn.r.e.rig.Get(t, "RIG_NODE_NAME")}, argv...)
	var out bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// shadowToken is a token bound to the tenant's shadow pod, for the
// gateway's audience: what the shadow logs in with.
func shadowToken(t *testing.T, tn *tenant) string {
	t.Helper()
	sp := tn.r.e.shadowPodNow(tn.pod, tn.pod.Namespace)
	if sp == nil {
		t.Fatalf("no shadow pod of %s/%s", tn.pod.Namespace, tn.pod.Name)
	}
	return testrig.PodToken(t, tn.r.e.client, sp, shadow.GatewayAudience)
}

// dialGateway logs in to the tenant's gateway, through its Service, with
// token, as a shadow does, the gateway's host key pinned from the
// ConfigMap it publishes in the tenant's namespace.
func (tn *tenant) dialGateway(token string) (*ssh.Client, error) {
	t, e := tn.r.e.t, tn.r.e
	ctx := context.Background()
	name := tn.r.name + "-gateway"
	svc, err := e.client.CoreV1().Services(tn.r.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the gateway's Service: %v", err)
	}
	cm, err := e.client.CoreV1().ConfigMaps(e.ns).Get(ctx, name+"-host-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the gateway's host keys: %v", err)
	}
	var keys [][]byte
	for rest := []byte(cm.Data["known_hosts"]); len(rest) > 0; {
		_, _, key, _, next, err := ssh.ParseKnownHosts(rest)
		if err != nil {
			break
		}
		keys = append(keys, key.Marshal())
		rest = next
	}
	if len(keys) == 0 {
		t.Fatalf("the gateway's host keys: none in %q", cm.Data["known_hosts"])
	}
	cfg := &ssh.ClientConfig{
		User: tunnel.GatewayUser,
		Auth: []ssh.AuthMethod{ssh.Password(token)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			for _, k := range keys {
				if bytes.Equal(k, key.Marshal()) {
					return nil
				}
			}
			return fmt.Errorf("host key %s not the gateway's", ssh.FingerprintSHA256(key))
		},
		Timeout: 20 * time.Second,
	}
	return ssh.Dial("tcp", serviceAddr(t, svc, int(svc.Spec.Ports[0].Port)), cfg)
}

// getOver sends GET /hosts to port through the gateway connection c.
func getOver(c *ssh.Client, port int) (string, error) {
	conn, err := c.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprint(conn, "GET /hosts HTTP/1.0\r\n\r\n"); err != nil {
		return "", err
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(conn)
	return b.String(), err
}
