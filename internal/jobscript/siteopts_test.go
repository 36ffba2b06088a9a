package jobscript

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
)

// testSiteOptions are the flavors of interLink's documentation, with its
// other plugin keys.
func testSiteOptions() SiteOptions {
	o, err := NewSiteOptions(config.Site{ContainerRuntime: "apptainer", Plugin: config.Plugin{
		DefaultFlavor: "default",
		Flavors: map[string]config.Flavor{
			"default":    {CPUDefault: 4, MemoryDefault: "16G", SlurmFlags: []string{"--partition=cpu", "--time=01:00:00"}},
			"gpu-nvidia": {CPUDefault: 8, MemoryDefault: "64G", SlurmFlags: []string{"--gres=gpu:1", "-p gpu"}},
			"gpu-two":    {CPUDefault: 16, MemoryDefault: "128G", SlurmFlags: []string{"--gres=gpu:a100:2 --partition=gpu"}},
			"high-io":    {CPUDefault: 16, MemoryDefault: "32G", SlurmFlags: []string{"--partition=fast-io", "--constraint=ssd"}},
		},
		CommandPrefix: "module load apptainer", BashPath: "/bin/bash",
		SingularityDefaultOptions: []string{"--nv", "--no-eval", "--containall"},
		ImagePrefix:               "docker://", SingularityPath: "/opt/apptainer/bin/apptainer",
	}})
	if err != nil {
		panic(err)
	}
	return o
}

// gpuPod asks for one NVIDIA GPU and sets no CPU.
func gpuPod() *corev1.Pod {
	p := scripttest.SimplePod("pytorch/pytorch:latest")
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": qty("1"), corev1.ResourceMemory: qty("2Gi")}
	return p
}

func TestNewSiteOptions(t *testing.T) {
	o := testSiteOptions()
	if f := o.Flavors["gpu-nvidia"]; f.GPUs != 1 || f.CPUs != 8 || f.MemoryMiB != 64<<10 || strings.Join(f.Flags, " ") != "--gres=gpu:1 --partition=gpu" {
		t.Errorf("gpu-nvidia: got %+v", f)
	}
	if f := o.Flavors["gpu-two"]; f.GPUs != 2 || len(f.Flags) != 2 {
		t.Errorf("gpu-two: got %+v; want 2 GPUs, 2 flags", f)
	}
	if o.Shell != "/bin/bash" || o.RuntimePath != "/opt/apptainer/bin/apptainer" || strings.Join(o.RuntimeOptions, " ") != "--nv --no-eval --containall" {
		t.Errorf("got %+v", o)
	}
	// Charliecloud takes no apptainer program or options.
	o, err := NewSiteOptions(config.Site{ContainerRuntime: "charliecloud", Plugin: config.Plugin{SingularityPath: "x"}})
	if err != nil || o.RuntimePath != "" {
		t.Errorf("charliecloud: got %+v, %v; want no runtime path", o, err)
	}
}

func TestNewSiteOptionsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    config.Plugin
		want string
	}{
		{"reserved flag", config.Plugin{Flavors: map[string]config.Flavor{"a": {SlurmFlags: []string{"--job-name=x"}}}},
			`Site.Flavors.a.SlurmFlags[0]: sbatch flag "--job-name=x": --job-name is set by sluice`},
		{"unknown flag", config.Plugin{Flavors: map[string]config.Flavor{"a": {SlurmFlags: []string{"--partitio=x"}}}},
			`Site.Flavors.a.SlurmFlags[0]: sbatch flag "--partitio=x"`},
		{"network", config.Plugin{SingularityDefaultOptions: []string{"--net"}},
			`Site.SingularityDefaultOptions: "--net": --net is refused: a network namespace`},
		{"hosts bind", config.Plugin{SingularityDefaultOptions: []string{"--bind /x:/etc/hosts"}},
			`Site.SingularityDefaultOptions: --bind "/x:/etc/hosts": bind "/x:/etc/hosts": it covers /etc/hosts`},
		{"unknown option", config.Plugin{SingularityDefaultOptions: []string{"--frobnicate"}},
			`sluice does not know the apptainer option --frobnicate`},
		{"program", config.Plugin{SingularityPath: "/opt/a$b"}, `Site.SingularityPath: must be letters, digits and _./+- only`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSiteOptions(config.Site{ContainerRuntime: "apptainer", Plugin: tc.p})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want an error with %q", err, tc.want)
			}
		})
	}
}

func TestFlavorChoice(t *testing.T) {
	o := testSiteOptions()
	for _, tc := range []struct {
		name       string
		annotation *string
		gpus       int64
		want       string
		warn       string
	}{
		{"default", nil, 0, "default", ""},
		{"named", ptr("high-io"), 0, "high-io", ""},
		{"named wins over GPUs", ptr("high-io"), 1, "high-io", ""},
		{"one GPU", nil, 1, "gpu-nvidia", ""},
		{"two GPUs", nil, 2, "gpu-two", ""},
		{"no flavor has 3 GPUs", nil, 3, "default", ReasonNoGPUFlavor + ": the pod asks for 3 GPUs and no flavor of the site asks for 3; the job gets the default flavor default"},
		{"unknown name", ptr("large"), 0, "default", ReasonFlavorNotFound + `: slurm-job.vk.io/flavor "large": the site has no such flavor (it has default, gpu-nvidia, gpu-two, high-io); the job gets the default flavor default`},
		{"unknown name, GPUs", ptr("large"), 2, "gpu-two", ReasonFlavorNotFound + `: slurm-job.vk.io/flavor "large": the site has no such flavor (it has default, gpu-nvidia, gpu-two, high-io); the flavor is chosen by the pod's GPUs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := ""
			if tc.annotation != nil {
				name = *tc.annotation
			}
			f, ws := o.chooseFlavor(name, tc.annotation != nil, tc.gpus)
			got := ""
			if f != nil {
				got = f.Name
			}
			var warn []string
			for _, w := range ws {
				warn = append(warn, w.Reason+": "+w.Message)
			}
			if got != tc.want || strings.Join(warn, "|") != tc.warn {
				t.Errorf("got %q, %q; want %q, %q", got, warn, tc.want, tc.warn)
			}
		})
	}
	var none SiteOptions
	if f, ws := none.chooseFlavor("", false, 2); f != nil || ws != nil {
		t.Errorf("no flavors: got %v, %v; want nothing", f, ws)
	}
	if _, ws := none.chooseFlavor("gpu", true, 0); len(ws) != 1 || ws[0].Reason != ReasonFlavorNotFound {
		t.Errorf("no flavors, one named: got %v; want FlavorNotFound", ws)
	}
	noDefault := SiteOptions{Flavors: o.Flavors}
	if f, ws := noDefault.chooseFlavor("", false, 5); f != nil || len(ws) != 1 || !strings.Contains(ws[0].Message, "no flavor (Site.DefaultFlavor is not set)") {
		t.Errorf("no default: got %v, %v", f, ws)
	}
}

func TestFlagsGPUs(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  int64
	}{
		{nil, 0},
		{[]string{"--partition=gpu"}, 0},
		{[]string{"--gres=gpu:2"}, 2},
		{[]string{"--gres=gpu"}, 1},
		{[]string{"--gres=gpu:a100"}, 1},
		{[]string{"--gres=gpu:a100:4"}, 4},
		{[]string{"--gres=mps:100,gpu:3"}, 3},
		{[]string{"--gpus=8"}, 8},
		{[]string{"--gres=gpu:1", "--gres=gpu:2"}, 2},
		{[]string{"--gres=gpus:2"}, 0},
	} {
		if got := flagsGPUs(tc.flags); got != tc.want {
			t.Errorf("flagsGPUs(%q) = %d; want %d", tc.flags, got, tc.want)
		}
	}
}

func TestFromPodFlavor(t *testing.T) {
	ctx := context.Background()
	o := testSiteOptions()
	pod := gpuPod()
	job, err := FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: o})
	if err != nil {
		t.Fatal(err)
	}
	// The flavor's CPUs where the pod sets none; the pod's own memory.
	if job.Flavor != "gpu-nvidia" || job.Resources.CPUs != 8 || job.Resources.MemoryMiB != 2048 || job.Resources.GPUs != 1 {
		t.Errorf("got flavor %q resources %+v; want gpu-nvidia, 8 CPUs, 2048 MiB, 1 GPU", job.Flavor, job.Resources)
	}
	if got := job.Containers[0].Image; got != "docker://pytorch/pytorch:latest" {
		t.Errorf("got image %q; want the prefix before it", got)
	}
	script, err := Script(job, ScriptOptions{JobDir: "/scratch/j", Runtime: RuntimeApptainer, Site: o})
	if err != nil {
		t.Fatal(err)
	}
	s := string(script)
	// flavor flags, then the pod's resources, which sbatch takes last
	if i, j := strings.Index(s, "#SBATCH --gres=gpu:1"), strings.Index(s, "#SBATCH --cpus-per-task=8"); i < 0 || j < i {
		t.Errorf("want the flavor's --gres before the resources:\n%s", s)
	}
	if !strings.HasPrefix(s, "#!/bin/bash\n") {
		t.Errorf("want #!/bin/bash first:\n%.40s", s)
	}

	// ExportPodData false: a ConfigMap volume is refused, an emptyDir is not.
	noData := SiteOptions{NoPodData: true}
	full := fullPod([3]string{"busybox", "busybox", "busybox"})
	_, err = FromPod(ctx, full, scripttest.NewSources(full.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: noData})
	if err == nil || !strings.Contains(err.Error(), "Site.ExportPodData is false") {
		t.Errorf("got %v; want the pod refused for its volumes", err)
	}
	scratch := scripttest.SimplePod("busybox")
	scratch.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if _, err := FromPod(ctx, scratch, scripttest.NewSources(scratch.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: noData}); err != nil {
		t.Errorf("emptyDir with ExportPodData false: %v", err)
	}
}

func TestImageRoot(t *testing.T) {
	for _, tc := range []struct {
		name, root string
		rt         Runtime
		want       string
	}{
		{"busybox", "", RuntimeApptainer, "busybox"},
		{"busybox", "docker://", RuntimeApptainer, "docker://busybox"},
		{"docker://busybox", "docker://", RuntimeApptainer, "docker://busybox"},
		{"/shared/a.sif", "docker://", RuntimeApptainer, "/shared/a.sif"},
		{"library/ubuntu:22.04", "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/", RuntimeApptainer, "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/library/ubuntu:22.04"},
		{"busybox", "/shared/ch/", RuntimeCharliecloud, "/shared/ch/busybox"},
		{"busybox", "/shared/ch/", RuntimeNone, "busybox"},
	} {
		if got := withImageRoot(tc.name, tc.root, tc.rt); got != tc.want {
			t.Errorf("withImageRoot(%q, %q, %s) = %q; want %q", tc.name, tc.root, tc.rt, got, tc.want)
		}
	}
}
