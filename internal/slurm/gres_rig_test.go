//go:build rig

package slurm

import (
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// A pod asking for nvidia.com/gpu: 1 gets the site's GPU flavor, as in
// interLink, and its job carries --gres=gpu:1, which the rig's node (two
// GPUs as a GRES, hack/rig/conf/gres.conf.in) schedules: scontrol reads
// it back, and the job runs with the GPU Slurm gave it.
func TestRigGPUFlavorJob(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		e.c.SiteOptions = jobscript.SiteOptions{
			DefaultFlavor: "cpu",
			Flavors: map[string]jobscript.Flavor{
				"cpu": {Name: "cpu", CPUs: 1, Flags: []string{"--partition=debug"}},
				"gpu": {Name: "gpu", CPUs: 2, Flags: []string{"--partition=debug", "--gres=gpu:1"}, GPUs: 1},
			},
		}
		pod := e.gpuPod(t, "gpu", `echo "gpus=$CUDA_VISIBLE_DEVICES"`)
		logs, held := e.runGPUJob(t, pod)
		if logs != "gpus=0\n" {
			t.Errorf("logs = %q; want %q (Slurm gave the job the node's first GPU)", logs, "gpus=0\n")
		}
		// The same job, held, read back with scontrol before it runs.
		if got := held["TresPerNode"]; !strings.Contains(got, "gpu:1") {
			t.Errorf("scontrol shows TresPerNode=%q; want gres:gpu:1", got)
		}
		if held["NumCPUs"] != "2" {
			t.Errorf("scontrol shows NumCPUs=%q; want the flavor's 2", held["NumCPUs"])
		}
	})
}
