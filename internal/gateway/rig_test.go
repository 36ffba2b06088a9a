//go:build rig

package gateway

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestRigTokenAuthenticator, on the rig's API server: shadows made by
// internal/shadow's Manager (their pods made by the real controllers) get
// pod-bound tokens from the TokenRequest API, and the authenticator, with
// real TokenReviews, grants each its own pod's tunnels and refuses a
// token of a pod that is no shadow, of a look-alike shadow in a namespace
// sluice did not create, of another audience, of a pod deleted and made
// again under its name, and one expired.
func TestRigTokenAuthenticator(t *testing.T) {
	rig := testrig.Load(t)
	c := rig.Kube(t)
	ctx := context.Background()
	sfx := rigSuffix()
	credNS, podNS := "gwauth-cred-"+sfx, "gwauth-"+sfx
	shadowNS := podNS + shadow.ShadowSuffix
	testrig.MakeNamespace(t, c, credNS)
	testrig.DeleteNamespaceAtEnd(t, c, shadowNS)

	spec := gatewaySpec()
	spec.NodeName, spec.CredentialsNamespace = "rig-gwauth-"+sfx, credNS
	spec.TunnelImage = rig.Get(t, "RIG_K8S_BUSYBOX_IMAGE")
	m := &shadow.Manager{Client: c, Spec: spec, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	web := offloaded(podNS, "web", "7c1d2e3f-4a5b-4c6d-8e7f-"+sfx+"000001", "redis:6379")
	db := offloaded(podNS, "db", "7c1d2e3f-4a5b-4c6d-8e7f-"+sfx+"000002", "")
	for _, p := range []*corev1.Pod{web, db} {
		if _, err := m.Ensure(ctx, p); err != nil {
			t.Fatalf("Ensure %s: %v", p.Name, err)
		}
	}
	if err := m.SetNode(ctx, web, "node1", "4242", "/tmp/sluice-sock/p-"+sfx); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	waitServiceAccount(t, c, shadowNS)
	webShadow, dbShadow := waitShadowPod(t, c, shadowNS, shadow.Name(web)), waitShadowPod(t, c, shadowNS, shadow.Name(db))

	// The gateway's client, counting its TokenReviews; an authentication
	// not cached makes 7 requests, more than client-go's default 5 a
	// second allows a storm.
	var reviews atomic.Int32
	rc := rig.KubeConfig(t)
	rc.QPS, rc.Burst = 200, 400
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/tokenreviews") {
				reviews.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	counted, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewTokenAuthenticator(TokenConfig{Client: counted, Shadows: ShadowScope{Node: spec.NodeName, CredentialsNamespace: credNS}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.Authenticate(ctx, testrig.PodToken(t, c, webShadow, Audience))
	if err != nil {
		t.Fatalf("Authenticate the web shadow's token: %v", err)
	}
	want := Grant{
		Pod:    PodRef{Namespace: podNS, Name: "web", UID: web.UID},
		Shadow: PodRef{Namespace: shadowNS, Name: webShadow.Name, UID: webShadow.UID},
		Job:    "4242", Node: "node1", SocketDir: "/tmp/sluice-sock/p-" + sfx,
		NodeConfigMap: types.NamespacedName{Namespace: shadowNS, Name: shadow.NodeConfigMap(shadow.Name(web))},
		ForwardPorts:  []int32{8080}, SocketNames: []string{"rev-6379.sock"}, Relayed: true,
	}
	if fmt.Sprint(*g) != fmt.Sprint(want) {
		t.Errorf("web's grant:\n got %+v\nwant %+v", *g, want)
	}
	// Another shadow's token carries that shadow's pod, never web's.
	if g, err := a.Authenticate(ctx, testrig.PodToken(t, c, dbShadow, Audience)); err != nil || g.Pod.Name != "db" || g.Node != "" || len(g.SocketNames) != 0 {
		t.Errorf("db's token: %+v, %v; want db's grant, no node yet, no socket", g, err)
	}

	storm(t, a, &reviews, c, webShadow)

	refused := func(what, token, why string) {
		t.Helper()
		g, err := a.Authenticate(ctx, token)
		t.Logf("%s: %v", what, err)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %+v, %v; want refused, saying %q", what, g, err, why)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("%s: the refusal holds the token", what)
		}
	}
	// A pod with the web shadow's labels but the ReplicaSet's hash, made
	// by whoever may make pods in the shadow namespace.
	lbls := maps.Clone(webShadow.Labels)
	delete(lbls, appsv1.DefaultDeploymentUniqueLabelKey)
	stray := barePod(t, c, shadowNS, "stray", rig.Get(t, "RIG_K8S_BUSYBOX_IMAGE"), lbls)
	refused("a pod no shadow made, in a trusted namespace", testrig.PodToken(t, c, stray, Audience), "no ReplicaSet controls it")
	refused("the web shadow's token for another audience", testrig.PodToken(t, c, webShadow, "https://kubernetes.default.svc.cluster.local"), "is invalid for the target audiences")

	remade := barePod(t, c, shadowNS, "remade", rig.Get(t, "RIG_K8S_BUSYBOX_IMAGE"), lbls)
	tok := testrig.PodToken(t, c, remade, Audience)
	if err := c.CoreV1().Pods(shadowNS).Delete(ctx, remade.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	release(t, c, remade)
	waitGone(t, c, shadowNS, remade.Name)
	barePod(t, c, shadowNS, "remade", rig.Get(t, "RIG_K8S_BUSYBOX_IMAGE"), lbls)
	refused("a pod deleted and made again under its name", tok, "does not match")

	// The web shadow's token with its times moved: signed again with the
	// rig's key, it is accepted while it lives and refused once expired.
	now := time.Now()
	if _, err := a.Authenticate(ctx, resigned(t, rig, testrig.PodToken(t, c, webShadow, Audience), now.Add(-time.Minute), now.Add(5*time.Minute))); err != nil {
		t.Errorf("the web shadow's token signed again, unexpired: %v", err)
	}
	refused("an expired token", resigned(t, rig, testrig.PodToken(t, c, webShadow, Audience), now.Add(-2*time.Hour), now.Add(-time.Hour)), "has expired")

	// A pod with all of the db shadow's labels: its ReplicaSet adopts it,
	// then deletes one of its two pods (a finalizer keeps this one
	// there). Either way the pod is refused: being deleted, or not
	// running the shadow's spec.
	adopted := barePod(t, c, shadowNS, "adopted", rig.Get(t, "RIG_K8S_BUSYBOX_IMAGE"), dbShadow.Labels)
	poll(t, "the db shadow's ReplicaSet to adopt pod adopted", func() bool {
		p, err := c.CoreV1().Pods(shadowNS).Get(ctx, adopted.Name, metav1.GetOptions{})
		return err != nil || metav1.GetControllerOf(p) != nil
	})
	_, err = a.Authenticate(ctx, testrig.PodToken(t, c, adopted, Audience))
	t.Logf("a pod adopted by the db shadow's ReplicaSet: %v", err)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "does not run its shadow's spec") && !strings.Contains(err.Error(), "being deleted") && !strings.Contains(err.Error(), "is gone") {
		t.Errorf("a pod adopted by the db shadow's ReplicaSet: %v; want refused", err)
	}

	// A look-alike: the web shadow's Deployment copied, labels and all,
	// into a namespace made by someone else.
	look := "gwauth-look-" + sfx + shadow.ShadowSuffix
	testrig.MakeNamespace(t, c, look)
	d, err := c.AppsV1().Deployments(shadowNS).Get(ctx, shadow.Name(web), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fake := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: look, Name: d.Name, Labels: d.Labels, Annotations: d.Annotations}, Spec: d.Spec}
	if _, err := c.AppsV1().Deployments(look).Create(ctx, fake, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceAccount(t, c, look)
	refused("a look-alike shadow in a namespace sluice did not create", testrig.PodToken(t, c, waitShadowPod(t, c, look, d.Name), Audience), "is not trusted: sluice did not create it")
}

// offloaded is a pod of ns with port 8080 and, if forwards is set, a
// reverse tunnel; only its shadow is made.
func offloaded(ns, name, uid, forwards string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Annotations: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
	}
	if forwards != "" {
		p.Annotations[annotations.ReverseForwards] = forwards
	}
	return p
}

func rigSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// poll calls done every 200 ms until it is true, failing the test after
// 60 s with what.
func poll(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !done(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitServiceAccount waits for the controller to make ns's default
// ServiceAccount, which a token is requested of.
func waitServiceAccount(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	poll(t, "ServiceAccount "+ns+"/default", func() bool {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
}

// waitShadowPod waits for the controllers to make a pod of the shadow
// name in ns, and returns it.
func waitShadowPod(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	sel := labels.Set{shadow.LabelShadow: name}.AsSelector().String()
	poll(t, "a pod of shadow "+ns+"/"+name, func() bool {
		list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		pod = &list.Items[0]
		return true
	})
	return pod
}

func waitGone(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	poll(t, "pod "+ns+"/"+name+" to go", func() bool {
		_, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// barePod makes a pod of ns with labels that no controller made, as the
// restricted Pod Security Standard of a shadow namespace admits it, with a
// finalizer that keeps it until the test ends.
func barePod(t *testing.T, c kubernetes.Interface, ns, name, image string, lbls map[string]string) *corev1.Pod {
	t.Helper()
	no, yes, uid := false, true, int64(65534)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, Finalizers: []string{"sluice.io/test-gwauth"}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", Image: image, Command: []string{"sleep", "3600"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
	p, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { release(t, c, p) })
	return p
}

// resigned is token with its times moved (issued at iat, expiring at exp),
// signed again with the rig's service-account key: a token the API server
// would have made with those times, such as an expired one (TokenRequest
// makes none shorter than 10 minutes).
func resigned(t *testing.T, rig *testrig.Rig, token string, iat, exp time.Time) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	claims["iat"], claims["nbf"], claims["exp"] = iat.Unix(), iat.Unix(), exp.Unix()
	if payload, err = json.Marshal(claims); err != nil {
		t.Fatal(err)
	}
	signed := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload)
	keyPEM, err := os.ReadFile(filepath.Join(filepath.Dir(rig.Get(t, "RIG_KUBE_CA")), "sa.key"))
	if err != nil {
		t.Fatalf("the rig's service-account key: %v", err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		t.Fatal("sa.key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := k.(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("sa.key is a %T, not RSA", k)
	}
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// storm authenticates 100 tokens of shadow at once, twice, as a
// reconnection storm would: the first round reviews each token once, the
// second none (reviews counts the TokenReviews a makes).
func storm(t *testing.T, a *TokenAuthenticator, reviews *atomic.Int32, c kubernetes.Interface, shadow *corev1.Pod) {
	t.Helper()
	tokens := make([]string, 100)
	for i := range tokens {
		tokens[i] = testrig.PodToken(t, c, shadow, Audience)
	}
	for round := 1; round <= 2; round++ {
		before, start := reviews.Load(), time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, len(tokens))
		for _, tok := range tokens {
			wg.Go(func() {
				if _, err := a.Authenticate(context.Background(), tok); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("storm round %d: %v", round, err)
		}
		n := reviews.Load() - before
		t.Logf("storm round %d: 100 authentications at once in %s, %d TokenReviews", round, time.Since(start).Round(time.Millisecond), n)
		if want := map[int]int32{1: 100, 2: 0}[round]; n != want {
			t.Errorf("storm round %d made %d TokenReviews; want %d", round, n, want)
		}
	}
}

// release removes barePod's finalizer from p.
func release(t *testing.T, c kubernetes.Interface, p *corev1.Pod) {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, err := c.CoreV1().Pods(p.Namespace).Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("remove the finalizer of pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}
