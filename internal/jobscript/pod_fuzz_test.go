package jobscript

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/sbatch/sbatchtest"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FuzzFromPod mutates fields of a full pod that come from users. FromPod must
// never panic; a pod it accepts must render for its runtime, keep its files
// in the job directory, and give exactly one #SBATCH line per directive.
func FuzzFromPod(f *testing.F) {
	f.Add(uint8(0), "conf/mode.txt", "/etc/app", "cache", "QUOTED", "it's $(EPOCHS)", "--qos=high", "busybox", "1500m", "metadata.labels['app']", "/work")
	f.Add(uint8(1), "../x", "relative", "../..", "1BAD", "a\x00b", "--out=x", "-v", "-1", "metadata.labels['", "")
	f.Add(uint8(2), "/abs", "/a:b", "/abs", "X", "$$(X)", "--x=a b\n--y", "docker://", "1E", "status.podIPs", "/w d")
	f.Add(uint8(3), "a/./b", "/a/../b", "a,b", "x", "\n", "#SBATCH --x", "/img.sif", "0.5", "spec.nodeName", "w")
	f.Fuzz(func(t *testing.T, rt uint8, itemPath, mountPath, subPath, envName, envValue, flags, image, cpu, fieldPath, workDir string) {
		runtimes := []Runtime{RuntimeApptainer, RuntimeSingularity, RuntimeCharliecloud, RuntimeNone}
		runtime := runtimes[int(rt)%len(runtimes)]
		pod := fullPod([3]string{"/i/fetch", "/i/train", "/i/log"})
		if runtime == RuntimeNone {
			withoutVolumes(pod)
		}
		pod.Annotations[AnnotationFlags] = flags
		c := &pod.Spec.Containers[0]
		c.Image, c.WorkingDir = image, workDir
		c.Env = append(c.Env, envVar(envName, envValue))
		c.Args = append(c.Args, envValue)
		if q, err := resource.ParseQuantity(cpu); err == nil {
			c.Resources.Limits["cpu"] = q
		}
		pod.Spec.Containers[1].Env = append(pod.Spec.Containers[1].Env, fieldEnv("F", fieldPath))
		if runtime != RuntimeNone {
			pod.Spec.Volumes[0].ConfigMap.Items[0].Path = itemPath
			c.VolumeMounts[0].MountPath = mountPath
			c.VolumeMounts[3].SubPath = subPath
		}
		job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: runtime})
		if err != nil {
			var pe *PodError
			if !errors.As(err, &pe) && !strings.Contains(err.Error(), "has no key") {
				t.Fatalf("got %v; want a *PodError", err)
			}
			return
		}
		script, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: runtime})
		if err != nil {
			t.Fatalf("Script refused a job FromPod made: %v", err)
		}
		for _, file := range job.Files {
			if checkRelPath(file.Path) != nil || !(strings.HasPrefix(file.Path, "volumes/") || strings.HasPrefix(file.Path, "env/")) {
				t.Fatalf("file %q is outside volumes/ and env/", file.Path)
			}
		}
		header := sbatchtest.Header(string(script))
		want := 4 + len(job.Flags) + 4 // name, output, error, chdir; cpus, mem, gres, time are all set by fullPod
		if len(header) != want {
			t.Fatalf("got %d #SBATCH lines; want %d:\n%s", len(header), want, strings.Join(header, "\n"))
		}
		for _, line := range header {
			if words := sbatchtest.Words(line); len(words) != 1 {
				t.Fatalf("sbatch reads %q as %q; want one word", line, words)
			}
		}
	})
}
