package gateway

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestTokenExpiry(t *testing.T) {
	exp := time.Unix(1893456000, 0)
	enc := func(payload string) string {
		return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
	}
	for _, tt := range []struct {
		token string
		want  time.Time
	}{
		{fakeJWT("a", exp), exp},
		{enc(`{"exp":1893456000.0}`), time.Time{}},
		{enc(`{"exp":"1893456000"}`), time.Time{}},
		{enc(`{"exp":-1}`), time.Time{}},
		{enc(`{"exp":99999999999999999999}`), time.Time{}},
		{enc(`{"iat":1}`), time.Time{}},
		{enc(`not json`), time.Time{}},
		{"a.b", time.Time{}},
		{"a.!!!.c", time.Time{}},
		{"opaque", time.Time{}},
		{"", time.Time{}},
		{"a." + strings.Repeat("A", maxTokenLen) + ".c", time.Time{}},
	} {
		if got := tokenExpiry(tt.token); !got.Equal(tt.want) {
			t.Errorf("tokenExpiry(%.40q) = %v; want %v", tt.token, got, tt.want)
		}
	}
}

// FuzzTokenExpiry: any token a client sends is read without panic, and an
// expiry is given only for a JWT whose exp is a positive integer.
func FuzzTokenExpiry(f *testing.F) {
	f.Add(fakeJWT("a", time.Unix(1893456000, 0)))
	f.Add("a.e30.c")
	f.Add("..")
	f.Add("a.eyJleHAiOjF9.b")
	f.Fuzz(func(t *testing.T, token string) {
		got := tokenExpiry(token)
		if got.IsZero() {
			return
		}
		if strings.Count(token, ".") != 2 || got.Unix() <= 0 || got.Unix() > 1<<40 {
			t.Errorf("tokenExpiry(%q) = %v", token, got)
		}
	})
}
