//go:build rig

package slurm

import (
	"context"
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod asking for nvidia.com/gpu: 1 gets the site's GPU flavor, as in
// interLink, and its job carries --gres=gpu:1, which the rig's node (two
// GPUs as a GRES, hack/rig/conf/gres.conf.in) schedules: scontrol reads
// it back, and the job runs with the GPU Slurm gave it.
func TestRigGPUFlavorJob(t *testing.T) {
	e := newRigEnv(t, RuntimeCharliecloud)
	e.c.SiteOptions = SiteOptions{
		DefaultFlavor: "cpu",
		Flavors: map[string]Flavor{
			"cpu": {Name: "cpu", CPUs: 1, Flags: []string{"--partition=debug"}},
			"gpu": {Name: "gpu", CPUs: 2, Flags: []string{"--partition=debug", "--gres=gpu:1"}, GPUs: 1},
		},
	}
	pod := simplePod(e.rig.Get(t, "RIG_IMAGE"))
	pod.Name, pod.Namespace, pod.UID = "gpu", "rig", types.UID(newUID(t))
	pod.Spec.Containers[0].Command = []string{"sh", "-c", `echo "gpus=$CUDA_VISIBLE_DEVICES"`}
	pod.Spec.Containers[0].Args = nil
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": qty("1")}
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
	if got := e.logs(t, ref, "hello", LogOptions{Tail: -1}); got != "gpus=0\n" {
		t.Errorf("logs = %q; want %q (Slurm gave the job the node's first GPU)", got, "gpus=0\n")
	}
	// The same job, held, read back with scontrol before it runs.
	script, err := Script(job, ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime, Site: e.c.SiteOptions})
	if err != nil {
		t.Fatal(err)
	}
	held := e.heldJob(t, script)
	if got := held["TresPerNode"]; !strings.Contains(got, "gpu:1") {
		t.Errorf("scontrol shows TresPerNode=%q; want gres:gpu:1", got)
	}
	if held["NumCPUs"] != "2" {
		t.Errorf("scontrol shows NumCPUs=%q; want the flavor's 2", held["NumCPUs"])
	}
}
