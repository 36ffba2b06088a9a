//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestDemo runs the demo behind `make demo` (hack/demo/helm-demo.sh) on the
// rig, under names of its own: helm install, the job with both tunnels,
// helm uninstall, and its own check that nothing is left. The node shows
// the site's OS, Charliecloud and Slurm versions (NodeInfo, read from the
// site at start).
func TestDemo(t *testing.T) {
	rigCluster(t)
	if _, ok := lookup("RIG_K8S_CONTAINERD_SOCK"); !ok {
		testrig.Unavailable(t, "the rig has no real node (RIG_K8S_CONTAINERD_SOCK missing from rig.env)")
	}
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "demo", "helm-demo.sh"))
	cmd.Env = append(os.Environ(), "SLUICE_DEMO_SUFFIX=-"+suffix())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/demo/helm-demo.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"says +PONG", "tls ok: CN=kube-apiserver 200 OK", "ok    no Slurm job", "ok    no copied credential", "time of each step",
		// kubectl get node -o wide: NodeInfo from the site
		"Debian GNU/Linux", "charliecloud://0.", "SLURM-VERSION"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	i := strings.LastIndex(string(out), "==> time of each step")
	t.Logf("the demo's steps:\n%s", string(out)[max(i, 0):])
}
