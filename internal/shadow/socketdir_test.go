package shadow

import (
	"path"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// TestReverseArgsHideSocketDir: the reverse tunnel's arguments do not name
// <SocketDirRoot>/<pod uid>, which any user of the site can work out from
// squeue: the tunnel reads the socket directory, named from the pod's salt,
// from the node ConfigMap.
func TestReverseArgsHideSocketDir(t *testing.T) {
	pod := testPod("science", "notebook", withAnnotation(annotations.ReverseForwards, "redis:6379"))
	spec := testSpec()
	objs, err := spec.Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	c := container(objs, ContainerReverse)
	predictable := path.Join(spec.SocketDirRoot, string(pod.UID))
	for _, a := range c.Args {
		if strings.Contains(a, predictable) {
			t.Errorf("argument %q names the predictable socket directory %s", a, predictable)
		}
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--socket-dir-file="+path.Join(mountNode, SocketDirKey)) {
		t.Errorf("args %q; want --socket-dir-file naming the node ConfigMap's %s", c.Args, SocketDirKey)
	}
}
