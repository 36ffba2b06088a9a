package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Audience is the audience of a shadow's token: sluice's own, so that the
// token the gateway sees is good for nothing else, the API server included,
// and a token made for anything else is no good here.
const Audience = shadow.GatewayAudience

// The extra fields of a TokenReview's user that name the pod a token is
// bound to; the API server fills them from the token's claims.
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// saPrefix starts the user name of a ServiceAccount's token.
const saPrefix = "system:serviceaccount:"

// How long a review is kept, and how many: long enough that a reconnection
// storm reviews each shadow's token once, short enough that a revoked
// token (its pod deleted) stops being honoured soon; the grant itself is
// read again at each Authenticate. Refusals are kept for less, so that a
// shadow retrying with the same token does not review it each time.
const (
	defaultCacheSize = 4096
	defaultAcceptTTL = 30 * time.Second
	defaultRefuseTTL = 5 * time.Second
)

// TokenAuthenticator is the gateway's Authenticator: it has the API server
// review a shadow's token (TokenReview, audience Audience), then makes the
// shadow's Grant from sluice's own records (GrantSource).
type TokenAuthenticator struct {
	client  kubernetes.Interface
	grants  *GrantSource
	reviews *reviewCache
	now     func() time.Time
}

// TokenConfig configures a TokenAuthenticator.
type TokenConfig struct {
	// Client reviews tokens and reads the shadows; required. Its rights:
	// create tokenreviews; get pods, replicasets, deployments, configmaps
	// and namespaces where shadows live; get the records in
	// CredentialsNamespace. An authentication whose review is not cached
	// makes 7 requests, 6 when it is: its rate limit (rest.Config's QPS and
	// Burst, 5 and 10 by default) must allow a reconnection storm.
	Client kubernetes.Interface
	// Shadows says which shadows are sluice's, and of which virtual node.
	Shadows ShadowScope
	// CacheSize bounds the reviews kept; if zero, 4096.
	CacheSize int
	// AcceptTTL and RefuseTTL are how long an accepted or refused review
	// is kept (never past the token's expiry); if zero, 30 s and 5 s.
	AcceptTTL, RefuseTTL time.Duration
}

// NewTokenAuthenticator checks cfg and returns its authenticator.
func NewTokenAuthenticator(cfg TokenConfig) (*TokenAuthenticator, error) {
	if cfg.Client == nil {
		return nil, errors.New("gateway: token authenticator: no client")
	}
	if err := cfg.Shadows.validate(); err != nil {
		return nil, fmt.Errorf("gateway: token authenticator: %w", err)
	}
	size, accept, refuse := cfg.CacheSize, cfg.AcceptTTL, cfg.RefuseTTL
	if size <= 0 {
		size = defaultCacheSize
	}
	if accept <= 0 {
		accept = defaultAcceptTTL
	}
	if refuse <= 0 {
		refuse = defaultRefuseTTL
	}
	return &TokenAuthenticator{
		client:  cfg.Client,
		grants:  &GrantSource{Client: cfg.Client, Scope: cfg.Shadows},
		reviews: newReviewCache(size, accept, refuse),
		now:     time.Now,
	}, nil
}

// review is what the API server said of a token: the shadow pod it is
// bound to and the ServiceAccount it runs as, or why it is refused.
type review struct {
	pod            PodRef
	serviceAccount string
	refused        string
}

// Authenticate returns the grant of the shadow whose token this is. A
// token the API server does not accept for Audience, or one not bound to a
// pod, or whose pod is not a shadow sluice made and runs in a trusted
// namespace, is refused with an error wrapping ErrRefused that says why;
// the token itself is never in an error.
func (a *TokenAuthenticator) Authenticate(ctx context.Context, token string) (*Grant, error) {
	switch {
	case token == "":
		return nil, refuse("no token")
	case len(token) > maxTokenLen:
		// Not worth the API server's time: its tokens are far shorter.
		return nil, refuse(fmt.Sprintf("token of %d bytes, longer than %d", len(token), maxTokenLen))
	}
	key := sha256.Sum256([]byte(token))
	now := a.now()
	r, ok := a.reviews.get(key, now)
	if !ok {
		var err error
		if r, err = a.review(ctx, token); err != nil {
			return nil, err
		}
		a.reviews.put(key, r, now, tokenExpiry(token))
	}
	if r.refused != "" {
		return nil, refuse(r.refused)
	}
	return a.grants.Grant(ctx, r.pod, r.serviceAccount)
}

// review has the API server review token; errors are only those where it
// could not judge the token.
func (a *TokenAuthenticator) review(ctx context.Context, token string) (review, error) {
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return review{}, fmt.Errorf("gateway: review token: %w", err)
	}
	return judge(tr.Status), nil
}

// judge turns a TokenReview's status into a review.
func judge(st authv1.TokenReviewStatus) review {
	if !st.Authenticated {
		why := "the API server does not accept the token for audience " + Audience
		if st.Error != "" {
			why += ": " + st.Error
		}
		return review{refused: why}
	}
	if !slices.Contains(st.Audiences, Audience) {
		return review{refused: fmt.Sprintf("the token is for audiences %q, not %s", st.Audiences, Audience)}
	}
	ns, sa, ok := strings.Cut(strings.TrimPrefix(st.User.Username, saPrefix), ":")
	if !strings.HasPrefix(st.User.Username, saPrefix) || !ok || ns == "" || sa == "" || strings.Contains(sa, ":") {
		return review{refused: fmt.Sprintf("user %q is not a ServiceAccount", st.User.Username)}
	}
	name, uid := st.User.Extra[extraPodName], st.User.Extra[extraPodUID]
	if len(name) != 1 || len(uid) != 1 || name[0] == "" || uid[0] == "" {
		return review{refused: fmt.Sprintf("the token of ServiceAccount %s/%s is not bound to a pod", ns, sa)}
	}
	return review{pod: PodRef{Namespace: ns, Name: name[0], UID: types.UID(uid[0])}, serviceAccount: sa}
}

// refuse is the error of a refused token: why names the reason, for the
// gateway's log.
func refuse(why string) error {
	return fmt.Errorf("gateway: token %w: %s", ErrRefused, why)
}
