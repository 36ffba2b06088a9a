package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://api.example:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := Load(good)
	if err != nil || rc.Host != "https://api.example:6443" || rc.BearerToken != "t" {
		t.Fatalf("Load(%s) = %+v, %v; want the file's server and token", good, rc, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not: [yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "kubeconfig "+bad) {
		t.Errorf("Load(%s): %v; want an error naming the file", bad, err)
	}
	// Outside a pod there is no in-cluster configuration.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := Load(""); err == nil || !strings.Contains(err.Error(), "or set --kubeconfig") {
		t.Errorf("Load(\"\") outside a pod: %v; want an error saying to set --kubeconfig", err)
	}
}
