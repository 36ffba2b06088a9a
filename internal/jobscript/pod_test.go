package jobscript

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
)

func fromPod(t *testing.T, pod *corev1.Pod, rt Runtime) *Job {
	t.Helper()
	job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: rt})
	if err != nil {
		t.Fatalf("FromPod: %v", err)
	}
	return job
}

func fileOf(t *testing.T, job *Job, path string) File {
	t.Helper()
	for _, f := range job.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no file %s in the job", path)
	return File{}
}

func TestFromPodContainers(t *testing.T) {
	job := fromPod(t, fullPod([3]string{"busybox", "python:3", "/img.sif"}), RuntimeApptainer)
	if len(job.Init) != 1 || len(job.Containers) != 2 {
		t.Fatalf("got %d init containers and %d containers; want 1 and 2", len(job.Init), len(job.Containers))
	}
	tr := job.Containers[0]
	if want := []string{"python3", "-m", "train"}; !reflect.DeepEqual(tr.Command, want) {
		t.Errorf("command = %q; want %q", tr.Command, want)
	}
	if want := []string{"--epochs=10", "--name", "train-7f9c", "$(POD_NAME)"}; !reflect.DeepEqual(tr.Args, want) {
		t.Errorf("args = %q; want %q", tr.Args, want)
	}
	if tr.WorkingDir != "/work" || tr.EnvFile != "env/trainer" {
		t.Errorf("working dir, env file = %q, %q; want /work, env/trainer", tr.WorkingDir, tr.EnvFile)
	}
	wantMounts := []Mount{
		{"volumes/config", "/etc/app", true},
		{"volumes/creds", "/run/secrets/db", true},
		{"volumes/scratch", "/scratch", false},
		{"volumes/scratch/cache", "/cache", false},
		{"volumes/podinfo", "/etc/podinfo", true},
		{"volumes/kube-api-access-x7k2p", "/var/run/secrets/kubernetes.io/serviceaccount", true},
	}
	if !reflect.DeepEqual(tr.Mounts, wantMounts) {
		t.Errorf("mounts = %+v; want %+v", tr.Mounts, wantMounts)
	}
	if want := []string{"--partition=gpu", "--qos=high", "--exclusive"}; !reflect.DeepEqual(job.Flags, want) {
		t.Errorf("flags = %q; want %q", job.Flags, want)
	}
	if want := (Resources{CPUs: 4, MemoryMiB: 1536, GPUs: 1, TimeLimit: 5400e9}); job.Resources != want {
		t.Errorf("resources = %+v; want %+v", job.Resources, want)
	}
}

// sourceEnv reads an env file the way the batch script does, in a real
// shell, and returns the variables it sets.
func sourceEnv(t *testing.T, data []byte) map[string]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("env", "-i", "sh", "-c", `set -a; . "$1"; exec env -0`, "sh", path).Output()
	if err != nil {
		t.Fatalf("sourcing %q: %v", data, err)
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	delete(vars, "PWD")
	return vars
}

func TestFromPodEnv(t *testing.T) {
	job := fromPod(t, fullPod([3]string{"busybox", "python:3", "/img.sif"}), RuntimeApptainer)
	f := fileOf(t, job, "env/trainer")
	if f.Mode != 0o600 {
		t.Errorf("env file mode = %o; want 600", f.Mode)
	}
	want := map[string]string{
		"CFG_URL":     "http://minio:9000/$(bucket)", // envFrom values are not expanded
		"CFG_mode":    "fast",                        // "log.level" is no shell name: left out
		"EPOCHS":      "10",
		"QUOTED":      `it's "quoted" $HOME \ back` + "`id`",
		"MULTI":       "line one\nline two\n",
		"DEPENDENT":   `it's "quoted" $HOME \ back` + "`id`|$(QUOTED)|$(UNDEFINED)|fast",
		"POD_NAME":    "train-7f9c",
		"POD_IP":      "",
		"APP":         "train",
		"CPU_MILLI":   "1500",
		"MEM_MIB":     "768",
		"DB_PASSWORD": `p@ss'w"rd $1`,
		// MAYBE refers to a missing key of an optional ref: not set.
	}
	if got := sourceEnv(t, f.Data); !reflect.DeepEqual(got, want) {
		t.Errorf("env = %q; want %q", got, want)
	}
	wantOrder := []string{"CFG_URL", "CFG_mode", "EPOCHS", "QUOTED", "MULTI", "DEPENDENT", "POD_NAME", "POD_IP", "APP", "CPU_MILLI", "MEM_MIB", "DB_PASSWORD"}
	var order []string
	for _, line := range strings.Split(string(f.Data), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && shellName.MatchString(k) {
			order = append(order, k)
		}
	}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("variables in order %q; want %q", order, wantOrder)
	}
}

func TestFromPodEnvOverrides(t *testing.T) {
	pod := scripttest.SimplePod("busybox")
	c := &pod.Spec.Containers[0]
	c.Command = []string{"echo", "$(A)", "$(B)"}
	c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	c.Env = []corev1.EnvVar{{Name: "A", Value: "$(B)"}, {Name: "B", Value: "b"}, {Name: "mode", Value: "slow"}, {Name: "A", Value: "again-$(A)"}}
	job := fromPod(t, pod, RuntimeApptainer)
	want := map[string]string{"URL": "http://minio:9000/$(bucket)", "mode": "slow", "A": "again-$(B)", "B": "b"}
	if got := sourceEnv(t, fileOf(t, job, "env/hello").Data); !reflect.DeepEqual(got, want) {
		t.Errorf("env = %q; want %q", got, want)
	}
	if want := []string{"echo", "again-$(B)", "b"}; !reflect.DeepEqual(job.Containers[0].Command, want) {
		t.Errorf("command = %q; want %q", job.Containers[0].Command, want)
	}
}

func TestFromPodVolumeFiles(t *testing.T) {
	job := fromPod(t, fullPod([3]string{"busybox", "python:3", "/img.sif"}), RuntimeApptainer)
	tests := []struct {
		path string
		mode fs.FileMode
		data string
	}{
		{"volumes/config/conf/mode.txt", 0o644, "fast"},
		{"volumes/config/url", 0o644, "http://minio:9000/$(bucket)"}, // 0755 asked, narrowed
		{"volumes/creds/password", 0o600, "p@ss'w\"rd $1"},           // 0777 asked, narrowed
		{"volumes/podinfo/labels", 0o644, `app="train"`},
		{"volumes/podinfo/cpu", 0o644, "500"},
		{"volumes/kube-api-access-x7k2p/token", 0o600, "token:team-a/trainer:aud=:exp=3607"},
		{"volumes/kube-api-access-x7k2p/namespace", 0o644, "team-a"},
	}
	for _, tt := range tests {
		f := fileOf(t, job, tt.path)
		if f.Mode != tt.mode || string(f.Data) != tt.data {
			t.Errorf("%s = %o %q; want %o %q", tt.path, f.Mode, f.Data, tt.mode, tt.data)
		}
	}
	wantDirs := []string{"volumes/config", "volumes/creds", "volumes/scratch", "volumes/podinfo", "volumes/kube-api-access-x7k2p", "volumes/scratch/cache"}
	if !reflect.DeepEqual(job.Dirs, wantDirs) {
		t.Errorf("dirs = %q; want %q", job.Dirs, wantDirs)
	}
}

func TestFromPodConfigMapAllKeys(t *testing.T) {
	pod := scripttest.SimplePod("busybox")
	pod.Spec.Volumes = []corev1.Volume{{Name: "all", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, DefaultMode: ptr(int32(0o400)),
	}}}}
	job := fromPod(t, pod, RuntimeApptainer)
	var got []string
	for _, f := range job.Files {
		if strings.HasPrefix(f.Path, "volumes/") {
			got = append(got, f.Path+" "+f.Mode.String())
		}
	}
	want := []string{"volumes/all/URL -r--------", "volumes/all/blob.bin -r--------", "volumes/all/log.level -r--------", "volumes/all/mode -r--------"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files = %q; want %q", got, want)
	}
}

func TestFromPodRefuses(t *testing.T) {
	vol := func(v corev1.Volume) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
	}
	src := func(name string, s corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: s}
	}
	cmItems := func(items ...corev1.KeyToPath) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Items: items}}
	}
	tests := []struct {
		name  string
		rt    Runtime
		edit  func(*corev1.Pod)
		field string
		want  string
	}{
		{"hostPath", RuntimeApptainer, vol(src("h", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}})), "spec.volumes[5].hostPath", "not supported"},
		{"pvc", RuntimeApptainer, vol(src("p", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}})), "spec.volumes[5].persistentVolumeClaim", "not supported"},
		{"nfs", RuntimeApptainer, vol(src("n", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}})), "spec.volumes[5].nfs", "not supported"},
		{"csi", RuntimeApptainer, vol(src("c", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}})), "spec.volumes[5].csi", "not supported"},
		{"ephemeral", RuntimeApptainer, vol(src("e", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}})), "spec.volumes[5].ephemeral", "not supported"},
		{"image", RuntimeApptainer, vol(src("i", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "x"}})), "spec.volumes[5].image", "not supported"},
		{"no source", RuntimeApptainer, vol(src("z", corev1.VolumeSource{})), "spec.volumes[5].(none)", "not supported"},
		{"item path with ..", RuntimeApptainer, vol(src("d", cmItems(corev1.KeyToPath{Key: "mode", Path: "../../x"}))), "spec.volumes[5].configMap.items[0].path", "leaves"},
		{"absolute item path", RuntimeApptainer, vol(src("d", cmItems(corev1.KeyToPath{Key: "mode", Path: "/etc/x"}))), "spec.volumes[5].configMap.items[0].path", "absolute"},
		{"path written twice", RuntimeApptainer, vol(src("d", cmItems(corev1.KeyToPath{Key: "mode", Path: "x"}, corev1.KeyToPath{Key: "URL", Path: "x"}))), "spec.volumes[5].configMap.items[1]", "written twice"},
		{"volume twice", RuntimeApptainer, vol(src("config", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})), "spec.volumes[5].name", "declared twice"},
		{"cluster trust bundle", RuntimeApptainer, vol(src("t", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "x"}}}}})), "spec.volumes[5].projected.sources[0].clusterTrustBundle", "not supported"},
		{"downward path unknown", RuntimeApptainer, vol(src("w", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "x", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.hostname"}}}}})), "spec.volumes[5].downwardAPI.items[0].fieldRef.fieldPath", "not supported"},
		{"relative mount path", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "etc/app" }, "spec.containers[0].volumeMounts[0].mountPath", "not absolute"},
		{"mount path with colon", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "/a:/b" }, "spec.containers[0].volumeMounts[0].mountPath", "':'"},
		{"mount of no volume", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, "spec.containers[0].volumeMounts[0].name", "no volume"},
		{"subPath escaping", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[2].SubPath = "../../etc" }, "spec.containers[0].volumeMounts[2].subPath", "leaves"},
		{"subPathExpr escaping", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[2].SubPathExpr = "/$(POD_NAME)" }, "spec.containers[0].volumeMounts[2].subPathExpr", "absolute"},
		{"mounts under none", RuntimeNone, func(*corev1.Pod) {}, "spec.initContainers[0].volumeMounts[0]", "automountServiceAccountToken"},
		{"sidecar", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		}, "spec.initContainers[0].restartPolicy", "sidecar"},
		{"charliecloud without command", RuntimeCharliecloud, func(p *corev1.Pod) {
			p.Spec.Containers[1].Command = nil
			p.Spec.InitContainers[0].Image, p.Spec.Containers[0].Image = "/i", "/i"
		}, "spec.containers[1].command", "charliecloud needs a command"},
		{"charliecloud docker image", RuntimeCharliecloud, func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "docker://busybox" }, "spec.initContainers[0].image", "image"},
		{"bad image", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "--help" }, "spec.containers[0].image", "image"},
		{"env name", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "my.var", Value: "x"}} }, "spec.containers[1].env[0].name", "shell variable name"},
		{"env NUL", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "X", Value: "a\x00b"}} }, "spec.containers[1].env[0]", "NUL"},
		{"field path", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.generateName"}}}}
		}, "spec.containers[1].env[0].valueFrom.fieldRef.fieldPath", "not supported"},
		{"file key ref", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{}}}}
		}, "spec.containers[1].env[0].valueFrom.fileKeyRef", "not supported"},
		{"resource of no container", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}}}}
		}, "spec.containers[1].env[0].valueFrom.resourceFieldRef.containerName", "no container"},
		{"unset limit of a default job", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.ephemeral-storage"}}}}
		}, "spec.containers[1].env[0].valueFrom.resourceFieldRef.resource", "site's default"},
		{"container named job", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "job" }, "spec.initContainers[0].name", "reserved"},
		{"flags", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationFlags] = "--exclusive\n-o /tmp/x" }, "metadata.annotations[slurm-job.vk.io/flags]", `"-o /tmp/x": sbatch flag "--output=/tmp/x": --output is set by sluice`},
		{"flag injection", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationFlags] = "--qos=a --wrap=id" }, "metadata.annotations[slurm-job.vk.io/flags]", "--wrap is set by sluice"},
		{"flag injection by a line break in quotes", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationFlags] = "--qos='a\n#SBATCH --wrap=id'" }, "metadata.annotations[slurm-job.vk.io/flags]", "without spaces, quotes"},
		{"pre-exec NUL", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationPreExec] = "a\x00" }, "metadata.annotations[slurm-job.vk.io/pre-exec]", "NUL"},
		{"pre-exec CR LF", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationPreExec] = "module load x\r\necho ok" }, "metadata.annotations[slurm-job.vk.io/pre-exec]", "CR LF"},
		{"command NUL", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[1].Command = []string{"sh", "-c", "echo a\x00b"} }, "spec.containers[1].command[2]", "NUL byte, which sbatch refuses"},
		{"args CR LF", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[1].Args = []string{"x", "a\r\nb"} }, "spec.containers[1].args[1]", "CR LF line break, which sbatch refuses"},
		{"init args NUL", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.InitContainers[0].Args = []string{"\x00"} }, "spec.initContainers[0].args[0]", "NUL"},
		{"CR LF through $(VAR)", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "DOS", Value: "a\r\nb"}}
			p.Spec.Containers[1].Args = []string{"$(DOS)"}
		}, "spec.containers[1].args[0]", "after $(VAR) expansion"},
		{"unknown flag", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationFlags] = "--partition=gpu\n--gpu=1" }, "metadata.annotations[slurm-job.vk.io/flags]", "sbatch flag \"--gpu=1\": sbatch has no option --gpu (write the option in full: --gpu-bind, --gpu-freq, --gpus"},
		{"flag without its value", RuntimeApptainer, func(p *corev1.Pod) { p.Annotations[AnnotationFlags] = "--qos" }, "metadata.annotations[slurm-job.vk.io/flags]", "--qos needs a value"},
		{"uid the job cannot be named after", RuntimeApptainer, func(p *corev1.Pod) { p.UID = "0B5C-Upper" }, "metadata.uid", "invalid pod uid"},
		{"cpu out of range", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[1].Resources.Requests["cpu"] = qty("2E") }, "spec.containers[1].resources.requests[cpu]", "out of range"},
		{"deadline", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(-1)) }, "spec.activeDeadlineSeconds", "time limit"},
		{"no containers", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers = nil }, "spec.containers", "no containers"},
		{"namespace", RuntimeApptainer, func(p *corev1.Pod) { p.Namespace = "a\nb" }, "metadata.namespace", "DNS label"},
		{"working dir", RuntimeApptainer, func(p *corev1.Pod) { p.Spec.Containers[0].WorkingDir = "work" }, "spec.containers[0].workingDir", "absolute"},
		{"volume devices", RuntimeApptainer, func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "d", DevicePath: "/dev/x"}}
		}, "spec.containers[0].volumeDevices", "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := fullPod([3]string{"busybox", "python:3", "/img.sif"})
			tt.edit(pod)
			wantPodError(t, pod, tt.rt, tt.field, tt.want)
		})
	}
}

// wantPodError checks that FromPod refuses pod with a *PodError naming
// field, with a reason containing want.
func wantPodError(t *testing.T, pod *corev1.Pod, rt Runtime, field, want string) {
	t.Helper()
	_, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: rt})
	var pe *PodError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v; want a *PodError", err)
	}
	if pe.Field != field || !strings.Contains(pe.Reason, want) {
		t.Errorf("got %q; want field %s and a reason containing %q", err, field, want)
	}
}

// TestFromPodMissingSources checks that what may appear later is not a
// *PodError, and that optional references are honoured.
func TestFromPodMissingSources(t *testing.T) {
	tests := []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{"configmap", func(p *corev1.Pod) { p.Spec.Volumes[0].ConfigMap.Name = "absent" }, "configmap team-a/absent not found"},
		{"secret key", func(p *corev1.Pod) { p.Spec.Containers[0].Env[9].ValueFrom.SecretKeyRef.Key = "absent" }, `has no key "absent"`},
		{"item key", func(p *corev1.Pod) { p.Spec.Volumes[0].ConfigMap.Items[0].Key = "absent" }, `spec.volumes[0].configMap.items[0].key: configmap team-a/app-config has no key "absent"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := fullPod([3]string{"busybox", "python:3", "/img.sif"})
			tt.edit(pod)
			_, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer})
			var pe *PodError
			if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want a plain error containing %q", err, tt.want)
			}
		})
	}
	t.Run("optional", func(t *testing.T) {
		pod := fullPod([3]string{"busybox", "python:3", "/img.sif"})
		pod.Spec.Volumes[0].ConfigMap.Name = "absent"
		pod.Spec.Volumes[0].ConfigMap.Optional = ptr(true)
		job := fromPod(t, pod, RuntimeApptainer)
		for _, f := range job.Files {
			if strings.HasPrefix(f.Path, "volumes/config/") {
				t.Errorf("got file %s of a missing optional configmap", f.Path)
			}
		}
		if job.Dirs[0] != "volumes/config" {
			t.Errorf("dirs = %q; want volumes/config made for the empty volume", job.Dirs)
		}
	})
	t.Run("source error", func(t *testing.T) {
		pod := fullPod([3]string{"busybox", "python:3", "/img.sif"})
		boom := errors.New("boom")
		src := scripttest.NewSources(pod.Namespace)
		src.Err = boom
		_, err := FromPod(context.Background(), pod, src, PodOptions{Runtime: RuntimeApptainer})
		if !errors.Is(err, boom) {
			t.Errorf("got %v; want it to wrap %v", err, boom)
		}
	})
	t.Run("read once", func(t *testing.T) {
		pod := fullPod([3]string{"busybox", "python:3", "/img.sif"})
		src := scripttest.NewSources(pod.Namespace)
		if _, err := FromPod(context.Background(), pod, src, PodOptions{Runtime: RuntimeApptainer}); err != nil {
			t.Fatal(err)
		}
		if src.Reads != 4 { // app-config, db-secret, absent, kube-root-ca.crt
			t.Errorf("got %d reads; want 4, one per object", src.Reads)
		}
	})
}

func TestFromPodNilInputs(t *testing.T) {
	if _, err := FromPod(context.Background(), nil, nil, PodOptions{Runtime: RuntimeApptainer}); err == nil {
		t.Error("got no error for a nil pod; want one")
	}
	if _, err := FromPod(context.Background(), scripttest.SimplePod("busybox"), nil, PodOptions{Runtime: "docker"}); err == nil {
		t.Error("got no error for an unknown runtime; want one")
	}
	if _, err := FromPod(context.Background(), scripttest.SimplePod("busybox"), nil, PodOptions{Runtime: RuntimeApptainer}); err != nil {
		t.Errorf("got %v for a pod that needs no sources; want none", err)
	}
}
