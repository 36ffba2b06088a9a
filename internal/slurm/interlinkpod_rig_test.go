//go:build rig

package slurm

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// A pod written as interLink's documentation writes one, on a site
// configured as interLink's plugin is (Flavors, DefaultFlavor): the
// interLink toleration, space-separated sbatch flags with short options
// (-p debug), mpi-flags, a GPU limit. It gets the GPU flavor, its job
// carries the partition, time, tasks and gres (scontrol reads them back),
// and both ranks run under the real mpiexec with the GPU Slurm gave the
// job.
func TestRigInterLinkPod(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		site, err := jobscript.NewSiteOptions(config.Site{ContainerRuntime: "charliecloud", Plugin: config.Plugin{
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
		pod := e.gpuPod(t, "interlink", `echo "rank $PMI_RANK of $PMI_SIZE gpus=$CUDA_VISIBLE_DEVICES"`)
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "virtual-node.interlink/no-schedule", Operator: corev1.TolerationOpExists}}
		pod.Annotations = map[string]string{
			jobscript.AnnotationFlags:    "-p debug --ntasks 2 -t 00:10:00",
			jobscript.AnnotationMPIFlags: "-prepend-rank",
		}
		logs, held := e.runGPUJob(t, pod)
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		slices.Sort(lines)
		if want := []string{"[0] rank 0 of 2 gpus=0", "[1] rank 1 of 2 gpus=0"}; !slices.Equal(lines, want) {
			t.Errorf("logs = %q; want %q", lines, want)
		}
		// The same job, held, read back with scontrol before it runs.
		for k, want := range map[string]string{"Partition": "debug", "TimeLimit": "00:10:00", "NumTasks": "2", "MinMemoryNode": "200M"} {
			if held[k] != want {
				t.Errorf("scontrol shows %s=%q; want %q", k, held[k], want)
			}
		}
		if got := held["TresPerNode"]; !strings.Contains(got, "gpu:1") {
			t.Errorf("scontrol shows TresPerNode=%q; want gres:gpu:1", got)
		}
	})
}
