//go:build rig

package slurm

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"k8s.io/apimachinery/pkg/types"
)

// A pod run with the site's flavor, interpreter and command prefix: its job
// gets the flavor's partition, CPUs and memory, the pod's own time limit
// (its flags win over the flavor's), runs under bash, and its container
// sees what the command prefix exported. scontrol reads the job back.
func TestRigFlavorJob(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		e.c.SiteOptions = jobscript.SiteOptions{
			DefaultFlavor: "small",
			Flavors: map[string]jobscript.Flavor{"small": {
				Name: "small", CPUs: 2, MemoryMiB: 100, Flags: []string{"--partition=debug", "--time=00:07:00"},
			}},
			Shell:         "/bin/bash",
			CommandPrefix: `export FROM_PREFIX="${BASH_VERSION:+bash} prefix"`,
		}
		pod := scripttest.SimplePod(e.rig.Get(t, "RIG_IMAGE"))
		pod.Name, pod.Namespace, pod.UID = "flavor", "rig", types.UID(newUID(t))
		pod.Spec.Containers[0].Command = []string{"sh", "-c", `echo "$FROM_PREFIX"`}
		pod.Spec.Containers[0].Args = nil
		pod.Annotations = map[string]string{jobscript.AnnotationFlags: "-t 8"}
		job, err := jobscript.FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), jobscript.PodOptions{Runtime: e.c.Runtime, Site: e.c.SiteOptions})
		if err != nil {
			t.Fatal(err)
		}
		if job.Flavor != "small" {
			t.Fatalf("got flavor %q; want small", job.Flavor)
		}
		ref := e.submit(t, job)
		st := e.wait(t, ref, "final", final)
		if st.State != StateCompleted {
			t.Fatalf("state %s; want COMPLETED: %+v", st.State, st)
		}
		if got := e.logs(t, ref, "hello", LogOptions{Tail: -1}); got != "bash prefix\n" {
			t.Errorf("logs = %q; want %q (the prefix ran in bash, its export reached the container)", got, "bash prefix\n")
		}
		// The same job, held, read back with scontrol before it runs.
		script, err := jobscript.Script(job, jobscript.ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime, Site: e.c.SiteOptions})
		if err != nil {
			t.Fatal(err)
		}
		got := e.heldJob(t, script)
		for k, want := range map[string]string{"Partition": "debug", "TimeLimit": "00:08:00", "MinMemoryNode": "100M", "NumCPUs": "2"} {
			if got[k] != want {
				t.Errorf("scontrol shows %s=%q; want %q", k, got[k], want)
			}
		}
	})
}

// A pod with mpi-flags and -n 2 runs its container under the real
// mpiexec (Debian's MPICH, Hydra, started by Slurm) with -np $SLURM_NTASKS
// as Slurm sets it: both ranks run ch-run and report, each line prefixed
// by Hydra's -prepend-rank, which the pod's mpi-flags pass on.
func TestRigMPIFlagsTakeSlurmsTasks(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		pod := scripttest.SimplePod(e.rig.Get(t, "RIG_IMAGE"))
		pod.Name, pod.Namespace, pod.UID = "mpi", "rig", types.UID(newUID(t))
		pod.Spec.Containers[0].Command = []string{"sh", "-c", `echo "rank $PMI_RANK of $PMI_SIZE"`}
		pod.Spec.Containers[0].Args = nil
		pod.Annotations = map[string]string{
			jobscript.AnnotationFlags:    "-n 2",
			jobscript.AnnotationMPIFlags: "-prepend-rank",
		}
		job, err := jobscript.FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), jobscript.PodOptions{Runtime: e.c.Runtime})
		if err != nil {
			t.Fatal(err)
		}
		ref := e.submit(t, job)
		if st := e.wait(t, ref, "final", final); st.State != StateCompleted {
			t.Fatalf("state %s; want COMPLETED: %+v", st.State, st)
		}
		lines := strings.Split(strings.TrimSpace(e.logs(t, ref, "hello", LogOptions{Tail: -1})), "\n")
		slices.Sort(lines)
		if want := []string{"[0] rank 0 of 2", "[1] rank 1 of 2"}; !slices.Equal(lines, want) {
			t.Errorf("logs = %q; want %q, one line of each rank", lines, want)
		}
	})
}
