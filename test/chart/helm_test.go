// Package chart tests the Helm chart charts/sluice with the helm that
// hack/tools/build.sh builds from its Go module: lint, golden renderings,
// values refused by values.schema.json, the rendered configuration as
// sluice-vk validates it, and the RBAC of a confined node.
//
// Without that helm the tests skip, saying how to build it; with CI=true
// they fail instead (`make test` and `make unit` build it first).
package chart

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

var chartDir = filepath.Join(root, "charts", "sluice")

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// helm returns the path of the built helm, or skips (fails under CI).
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		out, err := exec.Command(filepath.Join(root, "hack", "tools", "build.sh"), "path", "helm").Output()
		if err != nil {
			helmErr = err
			return
		}
		helmBin = strings.TrimSpace(string(out))
		if _, err := os.Stat(helmBin); err != nil {
			helmErr = err
		}
	})
	if helmErr != nil {
		msg := "helm is not built (hack/tools/build.sh helm): " + helmErr.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return helmBin
}

// runHelm runs helm with args; it returns stdout and, on failure, an error
// holding stderr.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	// no configuration, cache or plugins of the user's
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String()) + ": " + err.Error())
	}
	return stdout.String(), nil
}

// values returns the path of testdata/values/NAME.yaml.
func values(name string) string {
	return filepath.Join("testdata", "values", name+".yaml")
}

// template renders the chart as release "sluice" in namespace
// sluice-system.
func template(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runHelm(t, append([]string{"template", "sluice", chartDir, "--namespace", "sluice-system"}, args...)...)
}
