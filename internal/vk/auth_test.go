package vk

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// getOnlyAuth is the webhook auth of sluice-vk over a fake API server that
// answers TokenReviews and SubjectAccessReviews: it knows one token, of a
// monitoring service account that holds nodes/proxy get and nothing else.
// verbs returns every verb it was asked about.
func getOnlyAuth(t *testing.T) (auth nodeutil.Auth, verbs func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out any
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authnv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if tr.Spec.Token == "monitoring-token" {
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "system:serviceaccount:monitoring:scraper"}}
			}
			out = &tr
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authzv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || sar.Spec.ResourceAttributes == nil {
				http.Error(w, fmt.Sprint("bad review: ", err), http.StatusBadRequest)
				return
			}
			ra := sar.Spec.ResourceAttributes
			mu.Lock()
			asked = append(asked, ra.Verb)
			mu.Unlock()
			sar.Status.Allowed = ra.Resource == "nodes" && ra.Subresource == "proxy" && ra.Verb == "get"
			out = &sar
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(api.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	auth, err = nodeutil.WebhookAuth(client, "hpc")
	if err != nil {
		t.Fatal(err)
	}
	return auth, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// TestStreamsNeedCreate: an identity holding nodes/proxy get only is
// refused exec, attach, port-forward and run however it asks (a websocket
// upgrade is a GET), and still reads what get allows.
func TestStreamsNeedCreate(t *testing.T) {
	auth, verbs := getOnlyAuth(t)
	h := withAuth(auth, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/exec/ns/pod/main?command=sh&input=1&output=1&tty=1", http.StatusForbidden},
		{http.MethodPost, "/exec/ns/pod/main?command=sh", http.StatusForbidden},
		{http.MethodGet, "/attach/ns/pod/main?output=1", http.StatusForbidden},
		{http.MethodGet, "/portForward/ns/pod?ports=80", http.StatusForbidden},
		{http.MethodGet, "/run/ns/pod/main?cmd=id", http.StatusForbidden},
		{http.MethodGet, "//exec/ns/pod/main", http.StatusForbidden},
		{http.MethodGet, "/./portforward/ns/pod", http.StatusForbidden},
		{http.MethodGet, "/pods", http.StatusNoContent},
		{http.MethodGet, "/containerLogs/ns/pod/main", http.StatusNoContent},
	} {
		r := httptest.NewRequest(c.method, "https://hpc:10250"+c.path, nil)
		r.Header.Set("Authorization", "Bearer monitoring-token")
		if c.method == http.MethodGet && c.want == http.StatusForbidden {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s with nodes/proxy get only: got %d; want %d", c.method, c.path, w.Code, c.want)
		}
	}
	if v := verbs(); !slices.Contains(v, "create") || !slices.Contains(v, "get") {
		t.Errorf("asked the API server about verbs %q; want create (the streams) and get (the rest)", v)
	}
}

func TestRunsInPod(t *testing.T) {
	for p, want := range map[string]bool{
		"/exec/a/b/c": true, "/attach/a/b/c": true, "/portForward/a/b": true, "/run/a/b/c": true,
		"exec/a": true, "//exec": true, "/x/../exec/a": true, "/EXEC/a": true,
		"/pods": false, "/containerLogs/a/b/c": false, "/execs/a": false, "/": false, "": false,
	} {
		if got := runsInPod(p); got != want {
			t.Errorf("runsInPod(%q) = %v; want %v", p, got, want)
		}
	}
}

func FuzzRunsInPod(f *testing.F) {
	for _, p := range []string{"/exec/a/b/c", "//portForward/x", "/./run", "/pods", "/a/../attach/x", "%2fexec"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		// The same request however its path is spelled.
		if runsInPod(p) != runsInPod(path.Clean("/"+p)) {
			t.Errorf("runsInPod(%q) differs from its cleaned path's", p)
		}
		if first, _, _ := strings.Cut(strings.TrimPrefix(path.Clean("/"+p), "/"), "/"); strings.EqualFold(first, "exec") && !runsInPod(p) {
			t.Errorf("runsInPod(%q) = false for an exec", p)
		}
	})
}
