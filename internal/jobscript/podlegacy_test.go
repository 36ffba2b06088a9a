package jobscript

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
)

const (
	legacyFlags     = "slurm-job.knoc.io/flags"
	legacyMPIFlags  = "slurm-job.knoc.io/mpi-flags"
	legacyImageRoot = "slurm-job.knoc.io/image-root"
	legacyPreExec   = "slurm-job.knoc.io/pre-exec"
)

// A pod copied from interLink's tutorial runs: its job name is dropped with
// a Warning that names the key as written and the pod UID the job is named
// after, and every other flag is kept.
func TestFromPodDropsTheTutorialsJobName(t *testing.T) {
	for _, key := range []string{AnnotationFlags, legacyFlags} {
		t.Run(key, func(t *testing.T) {
			pod := scripttest.SimplePod("docker://busybox")
			pod.Annotations = map[string]string{key: "--job-name=test-pod-cfg -t 2800  --ntasks=8 --nodes=1 --mem-per-cpu=2000"}
			job := fromPod(t, pod, RuntimeApptainer)
			want := []string{"--time=2800", "--ntasks=8", "--nodes=1", "--mem-per-cpu=2000"}
			if !reflect.DeepEqual(job.Flags, want) {
				t.Errorf("flags %q; want %q", job.Flags, want)
			}
			var dropped []Warning
			for _, w := range job.Warnings {
				if w.Reason == ReasonFlagDropped {
					dropped = append(dropped, w)
				}
			}
			wantMsg := key + `: "--job-name=test-pod-cfg" dropped: sluice names the job after the pod UID, ` + string(pod.UID) + ", to find it again"
			if len(dropped) != 1 || dropped[0].Message != wantMsg {
				t.Errorf("warnings %+v; want one %s saying %q", job.Warnings, ReasonFlagDropped, wantMsg)
			}
			script, err := Script(job, ScriptOptions{JobDir: "/job", Runtime: RuntimeApptainer})
			if err != nil {
				t.Fatalf("Script: %v", err)
			}
			if names := strings.Count(string(script), "--job-name"); names != 1 || !strings.Contains(string(script), "#SBATCH --job-name="+string(pod.UID)+"\n") {
				t.Errorf("the script names the job %d times, not once after the pod UID:\n%s", names, script)
			}
		})
	}
}

// Annotations under the legacy prefix are read as their slurm-job.vk.io/
// counterparts, through the same checks, and refusals name the key the pod
// wrote; when both are set, the slurm-job.vk.io/ one is used.
func TestFromPodReadsTheLegacyPrefix(t *testing.T) {
	pod := scripttest.SimplePod("/img.sif")
	pod.Annotations = map[string]string{
		legacyFlags:     "-p debug",
		legacyMPIFlags:  "-bind-to core",
		legacyImageRoot: "/cvmfs/images",
		legacyPreExec:   "module load x",
	}
	job := fromPod(t, pod, RuntimeApptainer)
	if want := []string{"--partition=debug"}; !reflect.DeepEqual(job.Flags, want) {
		t.Errorf("flags %q; want %q", job.Flags, want)
	}
	if !job.MPI || !reflect.DeepEqual(job.MPIFlags, []string{"-bind-to", "core"}) {
		t.Errorf("mpi %v %q; want mpiexec with -bind-to core", job.MPI, job.MPIFlags)
	}
	if job.PreExec != "module load x" {
		t.Errorf("pre-exec %q; want the legacy one's", job.PreExec)
	}
	// an absolute image path keeps its own root: the legacy image root is
	// checked, not used
	if got := job.Containers[0].Image; got != "/img.sif" {
		t.Errorf("image %q; want /img.sif", got)
	}

	pod.Annotations = map[string]string{legacyFlags: "--wrap=id", AnnotationFlags: "-p gpu"}
	job = fromPod(t, pod, RuntimeApptainer)
	if want := []string{"--partition=gpu"}; !reflect.DeepEqual(job.Flags, want) {
		t.Errorf("both set: flags %q; want %q, the slurm-job.vk.io/ one's", job.Flags, want)
	}
}

func TestFromPodLegacyRefusals(t *testing.T) {
	tests := []struct {
		name  string
		rt    Runtime
		set   map[string]string
		field string
		want  string
	}{
		{"job name alone is not all that is refused", RuntimeApptainer, map[string]string{legacyFlags: "--job-name=x --output=/tmp/x"}, "metadata.annotations[" + legacyFlags + "]", "--output is set by sluice"},
		{"wrap", RuntimeApptainer, map[string]string{legacyFlags: "--wrap=id"}, "metadata.annotations[" + legacyFlags + "]", "--wrap is set by sluice"},
		{"chdir", RuntimeApptainer, map[string]string{legacyFlags: "-D /scratch -J x"}, "metadata.annotations[" + legacyFlags + "]", "--chdir is set by sluice"},
		{"injection", RuntimeApptainer, map[string]string{legacyFlags: "--qos='a\n#SBATCH --wrap=id'"}, "metadata.annotations[" + legacyFlags + "]", "without spaces, quotes"},
		{"unknown", RuntimeApptainer, map[string]string{legacyFlags: "--gpu=1"}, "metadata.annotations[" + legacyFlags + "]", "sbatch has no option --gpu"},
		{"image root", RuntimeApptainer, map[string]string{legacyImageRoot: "/a b"}, "metadata.annotations[" + legacyImageRoot + "]", "an image root is printable ASCII"},
		{"mpi flags", RuntimeApptainer, map[string]string{legacyMPIFlags: "-x\x01"}, "metadata.annotations[" + legacyMPIFlags + "]", "control characters"},
		{"pre-exec", RuntimeApptainer, map[string]string{legacyPreExec: "a\r\nb"}, "metadata.annotations[" + legacyPreExec + "]", "the snippet"},
		{"apptainer options", RuntimeApptainer, map[string]string{"slurm-job.knoc.io/singularity-options": "--net"}, "metadata.annotations[slurm-job.knoc.io/singularity-options]", "--net"},
		{"the vk.io one is checked when both are set", RuntimeApptainer, map[string]string{legacyFlags: "-p gpu", AnnotationFlags: "--wrap=id"}, "metadata.annotations[" + AnnotationFlags + "]", "--wrap is set by sluice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := scripttest.SimplePod("/img.sif")
			pod.Annotations = tt.set
			wantPodError(t, pod, tt.rt, tt.field, tt.want)
		})
	}
}

// The runtime's Warning of an annotation it cannot apply names the key the
// pod wrote.
func TestFromPodLegacyNotAppliedNamesTheKey(t *testing.T) {
	pod := scripttest.SimplePod("/img")
	pod.Spec.Containers[0].Command = []string{"true"}
	pod.Annotations = map[string]string{"slurm-job.knoc.io/singularity-options": "--nv"}
	job := fromPod(t, pod, RuntimeCharliecloud)
	if len(job.Warnings) != 1 || !strings.HasPrefix(job.Warnings[0].Message, "slurm-job.knoc.io/singularity-options: the site's runtime is charliecloud") {
		t.Errorf("warnings %+v; want one naming slurm-job.knoc.io/singularity-options", job.Warnings)
	}
	// the downward API reads the annotations as the pod wrote them
	pod.Spec.Containers[0].Env = []corev1.EnvVar{fieldEnv("F", "metadata.annotations['slurm-job.knoc.io/singularity-options']")}
	job = fromPod(t, pod, RuntimeCharliecloud)
	if env := sourceEnv(t, fileOf(t, job, job.Containers[0].EnvFile).Data); env["F"] != "--nv" {
		t.Errorf("F=%q; want --nv", env["F"])
	}
}

// A long job name in a multi-byte script is quoted cut on a character,
// never inside one.
func TestFromPodCutsTheDroppedNameOnARune(t *testing.T) {
	for pad := range 4 {
		pod := scripttest.SimplePod("docker://busybox")
		name := strings.Repeat("x", pad) + strings.Repeat("名", 200)
		pod.Annotations = map[string]string{AnnotationFlags: "--job-name=" + name + " --ntasks=1"}
		job := fromPod(t, pod, RuntimeApptainer)
		var msg string
		for _, w := range job.Warnings {
			if w.Reason == ReasonFlagDropped {
				msg = w.Message
			}
		}
		if !utf8.ValidString(msg) {
			t.Errorf("pad %d: the warning is not valid UTF-8: %q", pad, msg)
		}
		quoted, _, ok := strings.Cut(strings.TrimPrefix(msg, AnnotationFlags+": "), "... dropped:")
		if !ok || len(quoted) > maxDroppedText || len(quoted) < maxDroppedText-utf8.UTFMax || !strings.HasPrefix(strconv.Quote("--job-name="+name), quoted) {
			t.Errorf("pad %d: the warning quotes %q (%d bytes); want a prefix of the option cut near %d bytes", pad, quoted, len(quoted), maxDroppedText)
		}
	}
}
