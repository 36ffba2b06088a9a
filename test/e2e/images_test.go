//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// imported holds, per image name, the outcome of building it at the tests'
// version with hack/tools/images (as `make images` does) and importing it
// into the rig node's containerd: once per test binary.
var imported sync.Map // name → *imageImport

type imageImport struct {
	once sync.Once
	err  error
}

// importImage builds the image name (sluice-tunnel, sluice-vk) of version
// e2eVersion and imports it into the rig node's containerd, where pods run
// it without pulling (hack/tools/import-images.sh, which the demo runs too).
func importImage(t *testing.T, rig *testrig.Rig, name string) {
	t.Helper()
	sock := rig.Get(t, "RIG_K8S_CONTAINERD_SOCK")
	v, _ := imported.LoadOrStore(name, &imageImport{})
	im := v.(*imageImport)
	im.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "..", "hack", "tools", "import-images.sh")
		cmd := exec.Command(script, e2eVersion, name)
		cmd.Env = append(os.Environ(), "RIG_K8S_CONTAINERD_SOCK="+sock)
		if out, err := cmd.CombinedOutput(); err != nil {
			im.err = fmt.Errorf("hack/tools/import-images.sh %s %s: %v\n%s", e2eVersion, name, err, out)
		}
	})
	if im.err != nil {
		t.Fatal(im.err)
	}
}
