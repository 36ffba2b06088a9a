package vk

import (
	"net/http"
	"path"
	"strings"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// withAuth authenticates each request and authorises it with auth (a
// SubjectAccessReview), as nodeutil.WithAuth does, and also puts the user
// into the request's context (request.UserFrom) so that the sessions can
// be logged with it. A request that runs something in a pod (runsInPod)
// is authorised as nodes/proxy create whatever its HTTP method.
func withAuth(auth nodeutil.Auth, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok, err := auth.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		ctx := request.WithUser(r.Context(), info.User)
		attrs := auth.GetRequestAttributes(info.User, r)
		if runsInPod(r.URL.Path) {
			attrs = createVerb{attrs}
		}
		decision, _, err := auth.Authorize(ctx, attrs)
		if err != nil {
			http.Error(w, "authorization: "+err.Error(), http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// execPaths are the first path segments of the requests that run
// something in a pod or reach into it.
var execPaths = map[string]bool{"exec": true, "attach": true, "portforward": true, "run": true}

// runsInPod tells whether p is an exec, attach, port-forward or run
// request. nodeutil derives the verb from the HTTP method, and websocket
// upgrades are GETs: without this, nodes/proxy get (which monitoring
// service accounts often hold) would be enough to run a shell in any pod of
// the node. The path is cleaned and its case ignored first, so that no
// spelling the router might still take escapes the rule.
func runsInPod(p string) bool {
	first, _, _ := strings.Cut(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	return execPaths[strings.ToLower(first)]
}

// createVerb is a request's attributes with the verb create.
type createVerb struct{ authorizer.Attributes }

func (createVerb) GetVerb() string { return "create" }
