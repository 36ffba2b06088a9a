//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// e2eChartVersion is the chart's version as the tests push it: the
// release's version without its v, as `make release` packages it.
const e2eChartVersion = "0.0.0-e2e"

// pullSecret is the name of the Secret the helm tests pull with.
const pullSecret = "regcred"

// registry is the rig's registry (hack/rig/lib/registry.sh) as the tests
// use it.
type registry struct {
	addr, ca, user, password string
	// dockerConfig is a directory with config.json holding the
	// credentials, for the image tool ($DOCKER_CONFIG)
	dockerConfig string
	// registryConfig is helm's registry login (--registry-config)
	registryConfig string
	// digests are the pushed images' manifest digests by name: the tests
	// pull by digest, so that a node holding an image of an earlier run
	// under the same tag does not run it
	digests map[string]string
}

// prefix is where the tests' images and chart go.
func (g *registry) prefix() string { return g.addr + "/sluice-e2e" }

// chart is the chart's oci:// reference.
func (g *registry) chart() string { return "oci://" + g.prefix() + "/charts/sluice" }

// image is the reference of image name (sluice-vk, sluice-tunnel) pushed,
// by its tag and digest.
func (g *registry) image(name string) string {
	return g.prefix() + "/" + name + ":" + e2eVersion + "@" + g.digests[name]
}

// helmFlags are the flags helm reaches the registry with: TLS checked
// against the registry's CA, the login `helm registry login` keeps (the
// password never on a command line, which the site's users could read).
func (g *registry) helmFlags() []string {
	return []string{"--ca-file", g.ca, "--registry-config", g.registryConfig}
}

// dockerConfigJSON is a kubernetes.io/dockerconfigjson Secret's data.
func (g *registry) dockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(g.user + ":" + g.password))
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{g.addr: map[string]string{"auth": auth}}})
	return b
}

// createPullSecret makes the pull Secret in namespace ns.
func (g *registry) createPullSecret(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pullSecret}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: g.dockerConfigJSON()}}
	if _, err := client.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the pull secret in %s: %v", ns, err)
	}
}

var (
	pushOnce sync.Once
	pushed   *registry
	pushErr  error
)

// pushRelease pushes the sluice-vk and sluice-tunnel images of the tests'
// version (hack/tools/images -push, as `make images PUSH=…` does) and the
// chart (helm package, helm push) to the rig's registry, once per test
// binary: the registry keeps its manifests in memory, so each run pushes.
func pushRelease(t *testing.T, rig *testrig.Rig, helm string) *registry {
	t.Helper()
	if _, ok := lookup("RIG_REGISTRY"); !ok {
		testrig.Unavailable(t, "the rig has no registry (RIG_REGISTRY missing from rig.env)")
	}
	pushOnce.Do(func() {
		start := time.Now()
		pushed, pushErr = push(rig, t, helm)
		t.Logf("images and chart built and pushed to %s in %s", rig.Get(t, "RIG_REGISTRY"), time.Since(start).Round(100*time.Millisecond))
	})
	if pushErr != nil {
		t.Fatal(pushErr)
	}
	return pushed
}

func push(rig *testrig.Rig, t *testing.T, helm string) (*registry, error) {
	pw, err := os.ReadFile(rig.Get(t, "RIG_REGISTRY_PASSWORD_FILE"))
	if err != nil {
		return nil, fmt.Errorf("the registry's password: %w", err)
	}
	g := &registry{addr: rig.Get(t, "RIG_REGISTRY"), ca: rig.Get(t, "RIG_REGISTRY_CA"),
		user: rig.Get(t, "RIG_REGISTRY_USER"), password: strings.TrimSpace(string(pw))}
	// the directories outlive the test that pushed: the binary's
	dir, err := os.MkdirTemp("", "sluice-e2e-registry-")
	if err != nil {
		return nil, err
	}
	g.dockerConfig = filepath.Join(dir, "docker")
	if err := os.MkdirAll(g.dockerConfig, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(g.dockerConfig, "config.json"), g.dockerConfigJSON(), 0o600); err != nil {
		return nil, err
	}
	g.registryConfig = filepath.Join(dir, "registry.json")
	var stdout strings.Builder
	run := func(name string, env []string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), env...)
		if args[0] == "registry" {
			cmd.Stdin = strings.NewReader(g.password)
		}
		var stderr strings.Builder
		stdout.Reset()
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return nil
	}
	if err := run("go", []string{"DOCKER_CONFIG=" + g.dockerConfig}, "run", "./hack/tools/images",
		"-out", filepath.Join(dir, "images"), "-images", "sluice-vk,sluice-tunnel", "-version", e2eVersion,
		"-push", g.prefix(), "-push-ca", g.ca); err != nil {
		return nil, err
	}
	// one "NAME DIGEST FILE" line per image, NAME its reference
	g.digests = map[string]string{}
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(f[1], "sha256:") {
			continue
		}
		name := path.Base(f[0])
		name, _, _ = strings.Cut(name, ":")
		g.digests[name] = f[1]
	}
	for _, name := range []string{"sluice-vk", "sluice-tunnel"} {
		if g.digests[name] == "" {
			return nil, fmt.Errorf("the image tool printed no digest of %s: %q", name, stdout.String())
		}
	}
	helmEnv := []string{"HELM_CONFIG_HOME=" + dir, "HELM_CACHE_HOME=" + dir, "HELM_DATA_HOME=" + dir}
	if err := run(helm, helmEnv, "package", filepath.Join(repoRoot(), "charts", "sluice"), "--destination", dir,
		"--version", e2eChartVersion, "--app-version", e2eVersion); err != nil {
		return nil, err
	}
	if err := run(helm, helmEnv, "registry", "login", g.addr, "--username", g.user, "--password-stdin",
		"--ca-file", g.ca, "--registry-config", g.registryConfig); err != nil {
		return nil, err
	}
	args := append([]string{"push", filepath.Join(dir, "sluice-"+e2eChartVersion+".tgz"), "oci://" + g.prefix() + "/charts"}, g.helmFlags()...)
	if err := run(helm, helmEnv, args...); err != nil {
		return nil, err
	}
	return g, nil
}
