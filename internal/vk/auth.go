package vk

import (
	"net/http"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// withAuth authenticates each request and authorises it with auth (a
// SubjectAccessReview), as nodeutil.WithAuth does, and also puts the user
// into the request's context (request.UserFrom) so that the sessions can
// be logged with it.
func withAuth(auth nodeutil.Auth, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok, err := auth.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		ctx := request.WithUser(r.Context(), info.User)
		decision, _, err := auth.Authorize(ctx, auth.GetRequestAttributes(info.User, r))
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
