package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func writeUsers(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(f, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	return f
}

// start serves a registry over TLS on loopback, blobs in dir.
func start(t *testing.T, dir string) (*httptest.Server, string) {
	t.Helper()
	u, err := readUsers(writeUsers(t, "# the rig's\nsluice:s3cret\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	h, err := newServer(u, dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv, strings.TrimPrefix(srv.URL, "https://")
}

// TestPushPull pushes a random image as the registry's user, pulls it back
// by tag with the same digest, and checks that anonymous and wrong-password
// requests, reads included, are refused with a Basic challenge.
func TestPushPull(t *testing.T) {
	dir := t.TempDir()
	srv, host := start(t, dir)
	ref, err := name.ParseReference(host + "/sluice/thing:v1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	tr := srv.Client().Transport
	user := remote.WithAuth(&authn.Basic{Username: "sluice", Password: "s3cret"})
	if err := remote.Write(ref, img, user, remote.WithTransport(tr)); err != nil {
		t.Fatalf("push: %v", err)
	}
	got, err := remote.Image(ref, user, remote.WithTransport(tr))
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	want, _ := img.Digest()
	if d, err := got.Digest(); err != nil || d != want {
		t.Errorf("pulled %v (%v); want %v", d, err, want)
	}

	for what, opt := range map[string]remote.Option{
		"anonymous":      remote.WithAuth(authn.Anonymous),
		"wrong password": remote.WithAuth(&authn.Basic{Username: "sluice", Password: "s3cre"}),
		"unknown user":   remote.WithAuth(&authn.Basic{Username: "other", Password: "s3cret"}),
	} {
		_, err := remote.Image(ref, opt, remote.WithTransport(tr))
		var te *transport.Error
		if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s pull: got %v; want 401", what, err)
		}
	}
	resp, err := srv.Client().Get(srv.URL + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("GET /v2/: %s, WWW-Authenticate %q; want 401 with a Basic challenge", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}

	// the layers are on disk: a registry started again on the same
	// directory has them
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ld.Algorithm, ld.Hex)); err != nil {
		t.Errorf("the layer is not stored under the directory: %v", err)
	}
	srv2, host2 := start(t, dir)
	l, err := remote.Layer(ref.Context().Digest(ld.String()), user, remote.WithTransport(srv2.Client().Transport))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Size(); err != nil {
		t.Errorf("the layer after a restart (%s): %v", host2, err)
	}
}

func TestReadUsers(t *testing.T) {
	for text, want := range map[string]string{
		"":                 "names no user",
		"# only\n":         "names no user",
		"sluice\n":         "want user:password",
		":pass\n":          "want user:password",
		"sluice:\n":        "want user:password",
		"a:b\nbroken\nc:d": "users:2: want user:password",
	} {
		if _, err := readUsers(writeUsers(t, text, 0o600)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v; want %q", text, err, want)
		}
	}
	if _, err := readUsers(writeUsers(t, "a:b\n", 0o644)); err == nil || !strings.Contains(err.Error(), "want 0600") {
		t.Errorf("a world-readable file: got %v; want refused", err)
	}
	u, err := readUsers(writeUsers(t, "a:b:c\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/v2/", nil)
	r.SetBasicAuth("a", "b:c")
	if _, ok := u.admits(r); !ok {
		t.Error("a password holding a colon is not admitted")
	}
}
