package gateway

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// maxTokenLen bounds the tokens reviewed and decoded: ServiceAccount
// tokens are a few kilobytes at most.
const maxTokenLen = 16 << 10

// tokenExpiry reads the expiry (exp claim) of a JWT without checking its
// signature, or returns the zero time when it has none or is not a JWT. It
// is used only for a token the API server has just accepted, whose claims
// are therefore its own, and only to keep the review no longer than the
// token lives.
func tokenExpiry(token string) time.Time {
	if len(token) > maxTokenLen {
		return time.Time{}
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp *int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil || *claims.Exp <= 0 || *claims.Exp > 1<<40 {
		return time.Time{}
	}
	return time.Unix(*claims.Exp, 0)
}
