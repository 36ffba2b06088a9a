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
// it without pulling.
func importImage(t *testing.T, rig *testrig.Rig, name string) {
	t.Helper()
	sock := rig.Get(t, "RIG_K8S_CONTAINERD_SOCK")
	v, _ := imported.LoadOrStore(name, &imageImport{})
	im := v.(*imageImport)
	im.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "sluice-e2e-images-")
		if err != nil {
			im.err = err
			return
		}
		defer os.RemoveAll(dir)
		build := exec.Command("go", "run", "./hack/tools/images", "-out", dir, "-images", name, "-version", e2eVersion)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			im.err = fmt.Errorf("build the %s image: %v\n%s", name, err, out)
			return
		}
		imp := exec.Command("ctr", "--address", sock, "--namespace", "k8s.io", "images", "import", filepath.Join(dir, name+".tar"))
		if out, err := imp.CombinedOutput(); err != nil {
			im.err = fmt.Errorf("import the %s image: %v\n%s", name, err, out)
		}
	})
	if im.err != nil {
		t.Fatal(im.err)
	}
}
