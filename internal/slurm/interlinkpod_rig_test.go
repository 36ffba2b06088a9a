//go:build rig

package slurm

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-hpc/sluice/internal/config"
)

// A pod written as interLink's documentation writes one, on a site
// configured as interLink's plugin is (Flavors, DefaultFlavor): the
// interLink toleration, space-separated sbatch flags with short options
// (-p debug), mpi-flags, a GPU limit. It gets the GPU flavor, its job
// carries the partition, time, tasks and gres (scontrol reads them back),
// and both ranks run under the real mpiexec with the GPU Slurm gave the
// job.
func TestRigInterLinkPod(t *testing.T) {
	e := newRigEnv(t, RuntimeCharliecloud)
	site, err := NewSiteOptions(config.Site{ContainerRuntime: "charliecloud", Plugin: config.Plugin{
		DefaultFlavor: "cpu",
		Flavors: map[string]config.Flavor{
			"cpu": {Name: "cpu", CPUDefault: 1, MemoryDefault: "100M"},
			"gpu": {Name: "gpu", CPUDefault: 1, MemoryDefault: "200M", SlurmFlags: []string{"--gres=gpu:1"}},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.c.SiteOptions = site
	pod := simplePod(e.rig.Get(t, "RIG_IMAGE"))
	pod.Name, pod.Namespace, pod.UID = "interlink", "rig", types.UID(newUID(t))
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "virtual-node.interlink/no-schedule", Operator: corev1.TolerationOpExists}}
	pod.Annotations = map[string]string{
		AnnotationFlags:    "-p debug --ntasks 2 -t 00:10:00",
		AnnotationMPIFlags: "-prepend-rank",
	}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sh", "-c", `echo "rank $PMI_RANK of $PMI_SIZE gpus=$CUDA_VISIBLE_DEVICES"`}
	c.Args = nil
	c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": qty("1")}
	job, err := FromPod(context.Background(), pod, newSources(pod.Namespace), PodOptions{Runtime: e.c.Runtime, Site: e.c.SiteOptions})
	if err != nil {
		t.Fatal(err)
	}
	if job.Flavor != "gpu" || len(job.Warnings) != 0 {
		t.Fatalf("got flavor %q, warnings %+v; want gpu and none", job.Flavor, job.Warnings)
	}
	ref := e.submit(t, job)
	if st := e.wait(t, ref, "final", final); st.State != StateCompleted {
		t.Fatalf("state %s; want COMPLETED: %+v", st.State, st)
	}
	lines := strings.Split(strings.TrimSpace(e.logs(t, ref, "hello", LogOptions{Tail: -1})), "\n")
	slices.Sort(lines)
	if want := []string{"[0] rank 0 of 2 gpus=0", "[1] rank 1 of 2 gpus=0"}; !slices.Equal(lines, want) {
		t.Errorf("logs = %q; want %q", lines, want)
	}
	// The same job, held, read back with scontrol before it runs.
	script, err := Script(job, ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime, Site: e.c.SiteOptions})
	if err != nil {
		t.Fatal(err)
	}
	held := e.heldJob(t, script)
	for k, want := range map[string]string{"Partition": "debug", "TimeLimit": "00:10:00", "NumTasks": "2", "MinMemoryNode": "200M"} {
		if held[k] != want {
			t.Errorf("scontrol shows %s=%q; want %q", k, held[k], want)
		}
	}
	if got := held["TresPerNode"]; !strings.Contains(got, "gpu:1") {
		t.Errorf("scontrol shows TresPerNode=%q; want gres:gpu:1", got)
	}
}
