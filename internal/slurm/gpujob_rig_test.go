//go:build rig

package slurm

import (
	"context"
	"path"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// gpuPod is a pod of the rig's image, name in namespace rig, whose one
// container runs sh -c cmd and asks for one nvidia.com/gpu.
func (e *rigEnv) gpuPod(t *testing.T, name, cmd string) *corev1.Pod {
	t.Helper()
	pod := scripttest.SimplePod(e.rig.Get(t, "RIG_IMAGE"))
	pod.Name, pod.Namespace, pod.UID = name, "rig", types.UID(newUID(t))
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sh", "-c", cmd}
	c.Args = nil
	c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	return pod
}

// runGPUJob makes pod's job under e's site options, which must give it the
// gpu flavor and no warning, runs it to COMPLETED, and returns the logs of
// its container and the fields scontrol shows of the same job submitted
// held.
func (e *rigEnv) runGPUJob(t *testing.T, pod *corev1.Pod) (logs string, held map[string]string) {
	t.Helper()
	job, err := jobscript.FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), jobscript.PodOptions{Runtime: e.c.Runtime, Site: e.c.SiteOptions})
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
	logs = e.logs(t, ref, pod.Spec.Containers[0].Name, LogOptions{Tail: -1})
	script, err := jobscript.Script(job, jobscript.ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime, Site: e.c.SiteOptions})
	if err != nil {
		t.Fatal(err)
	}
	return logs, e.heldJob(t, script)
}
