package jobscript

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/site"
)

// enrootSiteOptions are an enroot site's plugin keys, as interLink's
// installation guide writes them, with a flavor.
func enrootSiteOptions() SiteOptions {
	o, err := NewSiteOptions(config.Site{ContainerRuntime: "enroot", Plugin: config.Plugin{
		DefaultFlavor: "default",
		Flavors: map[string]config.Flavor{
			"default":    {CPUDefault: 4, MemoryDefault: "16G", SlurmFlags: []string{"--partition=cpu"}},
			"gpu-nvidia": {CPUDefault: 8, MemoryDefault: "64G", SlurmFlags: []string{"--gres=gpu:1 -p gpu"}},
		},
		EnrootDefaultOptions: []string{"--root"}, EnrootPath: "/opt/enroot/bin/enroot", EnrootPrefix: "docker://",
		CommandPrefix: "module load enroot",
	}})
	if err != nil {
		panic(err)
	}
	return o
}

// withoutMultiline drops the variables whose values span lines, which
// enroot cannot hold.
func withoutMultiline(p *corev1.Pod) *corev1.Pod {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			cs[i].Env = slices.DeleteFunc(cs[i].Env, func(e corev1.EnvVar) bool { return strings.Contains(e.Value, "\n") })
		}
	}
	return p
}

func TestEnrootImage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/shared/images/pytorch.sqsh", "/shared/images/pytorch.sqsh"},
		{"ubuntu:24.04", "docker://ubuntu:24.04"},
		{"library/ubuntu", "docker://library/ubuntu"},
		{"nvcr.io/nvidia/pytorch:24.01-py3", "docker://nvcr.io#nvidia/pytorch:24.01-py3"},
		{"localhost:5000/x/y:1", "docker://localhost:5000#x/y:1"},
		{"localhost/x", "docker://localhost#x"},
		{"ghcr.io/org/app@sha256:" + strings.Repeat("a", 64), "docker://ghcr.io#org/app@sha256:" + strings.Repeat("a", 64)},
		{"docker://nvcr.io/nvidia/cuda:12.4", "docker://nvcr.io#nvidia/cuda:12.4"},
		{"docker://nvcr.io#nvidia/cuda:12.4", "docker://nvcr.io#nvidia/cuda:12.4"},
		{"docker://$oauthtoken@nvcr.io#nvidia/cuda", "docker://$oauthtoken@nvcr.io#nvidia/cuda"},
		{"dockerd://local:1", "dockerd://local:1"},
		{"podman://x", "podman://x"},
	} {
		got, err := RuntimeEnroot.image(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("image(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"docker://", "docker://-x", "oras://x/y", "library://a/b", "a b", "/a/../b", ""} {
		if got, err := RuntimeEnroot.image(in); err == nil {
			t.Errorf("image(%q) = %q; want an error", in, got)
		}
	}
}

func TestEnrootOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		src  optionSource
		want string
	}{
		{"--rw --root", optionsFromPod, "--rw --root"},
		{"-w -r", optionsFromSite, "--rw --root"},
		{`-e "A=b c" --env=PATH --env X=`, optionsFromPod, "--env A=b c --env PATH --env X="},
		{"-m /a:/b --mount=/c:/d:none:bind,ro", optionsFromPod, "--mount /a:/b --mount /c:/d:none:bind,ro"},
		{"/a:/b /c:/d:none:x-create=dir,rbind,nosuid", mountsFromPod, "--mount /a:/b --mount /c:/d:none:x-create=dir,rbind,nosuid"},
		{"--mount /a:/b", mountsFromPod, "--mount /a:/b"},
		{"", optionsFromPod, ""},
	} {
		got, err := checkEnrootOptions([]string{tc.in}, tc.src)
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("checkEnrootOptions(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestEnrootOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		in   string
		src  optionSource
		want string
	}{
		{"--conf /home/alice/x.sh", optionsFromPod, "--conf is refused: a configuration script runs before the container starts and may mount over /etc/hosts"},
		{"-c x", optionsFromPod, "--conf is refused"},
		{"--rc /x", optionsFromPod, "--rc is refused: sluice sets the command script"},
		{"--net", optionsFromPod, "sluice does not know the enroot start option --net"},
		{"-x", optionsFromPod, "sluice does not know the enroot start option -x"},
		{"--rw=yes", optionsFromPod, "--rw takes no value"},
		{"--env", optionsFromPod, "--env needs a value"},
		{"--env 1A=x", optionsFromPod, "want KEY or KEY=VALUE"},
		{"--env 'A=x\ny'", optionsFromPod, "control characters"},
		{"mycontainer", optionsFromPod, "is not an enroot start option"},
		{"--rw", mountsFromPod, "takes mounts only"},
		{"--mount /x:/etc/hosts", optionsFromPod, "it covers /etc/hosts"},
		{"/x:/etc", mountsFromPod, "it covers /etc/hosts"},
		{"/x:/", mountsFromPod, "it covers /etc/hosts"},
		{"/x:/etc/", mountsFromPod, "not a clean absolute path"},
		{"x:/y", mountsFromPod, "not a clean absolute path"},
		{"/x", mountsFromPod, "want src:dst"},
		{"/a:/b:none:bind:1", mountsFromPod, "want src:dst"},
		{"/a:/b:tmpfs", mountsFromPod, "the type is none"},
		{"/a:/b:none:bind,x-detach", mountsFromPod, `the mount option "x-detach"`},
		{"/a:/b:none:x-move", mountsFromPod, `the mount option "x-move"`},
		{"/a,b:/c", mountsFromPod, "without spaces or commas"},
		{"'unterminated", optionsFromPod, "quote"},
	} {
		got, err := checkEnrootOptions([]string{tc.in}, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkEnrootOptions(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.want)
		}
	}
}

// Every accepted option list reads back the same; every mount accepted
// is checked, and none covers /etc/hosts.
func FuzzEnrootOptions(f *testing.F) {
	for _, s := range []string{"--rw", "-m /a:/b:none:bind,ro", "--mount=/x:/etc/hosts", "-e 'A=b c' -r", "--conf x", "x", "/a:/b"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, in string, mounts bool) {
		src := optionsFromPod
		if mounts {
			src = mountsFromPod
		}
		got, err := checkEnrootOptions([]string{in}, src)
		if err != nil {
			return
		}
		again, err := checkEnrootWords(got, optionsFromPod)
		if err != nil || !slices.Equal(got, again) {
			t.Fatalf("checkEnrootOptions(%q) = %q, which reads back as %q, %v", in, got, again, err)
		}
		for i := 0; i < len(got); i++ {
			o := got[i]
			name := strings.TrimPrefix(o, "--")
			opt, ok := enrootOptions[name]
			if !strings.HasPrefix(o, "--") || !ok || opt.refused != "" || mounts && name != "mount" {
				t.Fatalf("checkEnrootOptions(%q) accepted %q", in, o)
			}
			if !opt.value {
				continue
			}
			i++
			if name != "mount" {
				continue
			}
			dst := strings.Split(got[i], ":")[1]
			if dst == "/" || dst == "/etc" || dst == "/etc/hosts" || hasControl(got[i]) || strings.ContainsAny(got[i], " \t") {
				t.Fatalf("checkEnrootOptions(%q) accepted the mount %q", in, got[i])
			}
		}
	})
}

func FuzzParseEnrootMount(f *testing.F) {
	for _, s := range []string{"/a:/b", "/a:/b:none:bind,ro", "/x:/etc", "a:b", "/a:/b:", "/a::none", "/a:/b:none:x-create=file,bind"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if parseEnrootMount(spec) != nil {
			return
		}
		fields := strings.Split(spec, ":")
		if len(fields) < 2 || len(fields) > 4 || !strings.HasPrefix(fields[0], "/") || covers(fields[1]) ||
			strings.ContainsAny(spec, " \t\n") || hasControl(spec) || len(fields) > 2 && fields[2] != "none" {
			t.Fatalf("parseEnrootMount accepted %q", spec)
		}
	})
}

// The enroot command line: the verb apart, options of the site then of
// the pod, the variables by name, the volumes, the command script with
// the working directory when the pod gives a command; the image's
// entrypoint with the args when it does not.
func TestEnrootArgv(t *testing.T) {
	c := &Container{
		Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo $A"}, Args: []string{"x"},
		WorkingDir: "/work", EnvNames: []string{"A", "B"},
		Mounts: []Mount{{Source: "volumes/data", Target: "/data", ReadOnly: true}, {Source: "volumes/out", Target: "/out"}},
	}
	got := strings.Join(RuntimeEnroot.argv(c, "/d/ns-uid", []string{"--rw"}), " ")
	want := "--rw --env A --env B --mount /d/ns-uid/volumes/data:/data:none:x-create=auto,bind,ro " +
		"--mount /d/ns-uid/volumes/out:/out:none:x-create=auto,bind --rc /d/ns-uid/enroot.rc sluice-ns-uid-main /work sh -c echo $A x"
	if got != want {
		t.Errorf("argv = %s\nwant   %s", got, want)
	}
	c.Command, c.WorkingDir = nil, ""
	if got, want := strings.Join(RuntimeEnroot.argv(c, "/d/ns-uid", nil), " "), "--env A --env B --mount /d/ns-uid/volumes/data:/data:none:x-create=auto,bind,ro --mount /d/ns-uid/volumes/out:/out:none:x-create=auto,bind sluice-ns-uid-main x"; got != want {
		t.Errorf("argv = %s\nwant   %s", got, want)
	}
	c.WorkingDir = "/work"
	if err := RuntimeEnroot.checkContainer(c); err == nil || !strings.Contains(err.Error(), "runs a workingDir only with a command") {
		t.Errorf("checkContainer with a workingDir and no command: %v", err)
	}
}

// A pod under enroot: its annotations reach the job, a multi-line value
// refuses it, the command script is one of its files; under apptainer
// the enroot annotations give a Warning.
func TestFromPodEnroot(t *testing.T) {
	ctx := context.Background()
	pod := scripttest.SimplePod("nvcr.io/nvidia/cuda:12.4")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{envVar("A", "1")}
	pod.Annotations = map[string]string{AnnotationEnrootOptions: "--rw", AnnotationEnrootMounts: "/scratch:/scratch"}
	job, err := FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeEnroot, Site: SiteOptions{RuntimeOptions: []string{"--root"}}})
	if err != nil {
		t.Fatalf("FromPod: %v", err)
	}
	if got := site.Join(job.RuntimeOptions); got != "--mount /scratch:/scratch --rw" {
		t.Errorf("runtime options %s", got)
	}
	if !slices.Equal(job.Containers[0].EnvNames, []string{"A"}) {
		t.Errorf("env names %q", job.Containers[0].EnvNames)
	}
	if !slices.ContainsFunc(job.Files, func(f File) bool { return f.Path == enrootRCFile && string(f.Data) == enrootRC }) {
		t.Errorf("no %s among the files", enrootRCFile)
	}
	script, err := Script(job, ScriptOptions{JobDir: "/d/default-x", Runtime: RuntimeEnroot, Site: SiteOptions{RuntimeOptions: []string{"--root"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`sluice_enroot_make sluice-default-x-hello 'docker://nvcr.io#nvidia/cuda:12.4'`,
		`"$sluice_runtime" start --root --mount /scratch:/scratch --rw --env A sluice-default-x-hello --greeting 'hi there'`,
	} {
		if !strings.Contains(string(script), want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}

	pod.Spec.Containers[0].Env = []corev1.EnvVar{envVar("A", "1\n2")}
	if _, err := FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeEnroot}); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("FromPod with a multi-line value: %v", err)
	}
	pod.Annotations[AnnotationEnrootMounts] = "/x:/etc"
	if _, err := FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeEnroot}); err == nil || !strings.Contains(err.Error(), AnnotationEnrootMounts) {
		t.Errorf("FromPod with a mount over /etc: %v", err)
	}
	pod.Annotations[AnnotationEnrootMounts] = "/x:/y"
	job, err = FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer})
	if err != nil {
		t.Fatal(err)
	}
	if len(job.RuntimeOptions) != 0 || len(job.Warnings) != 2 || !strings.Contains(job.Warnings[0].Message, "not enroot") {
		t.Errorf("under apptainer: options %q, warnings %+v", job.RuntimeOptions, job.Warnings)
	}
}

// kubectl exec under enroot starts the job's enroot container again, with
// the hosts copy mounted by the exec script.
func TestEnrootExecArgv(t *testing.T) {
	c := Container{Name: "main", Image: "busybox", EnvFile: "env/main", EnvNames: []string{"A"}}
	argv, err := RuntimeEnroot.ExecArgv(c, []string{"ls", "-l"}, ExecOptions{JobID: "7", Host: "node1", JobDir: "/d/ns-uid"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(argv, "enroot")
	if i < 0 || site.Join(argv[i:]) != "enroot start --env A --rc /d/ns-uid/enroot.rc sluice-ns-uid-main '' ls -l" {
		t.Errorf("exec argv %q", argv)
	}
	if !strings.Contains(execScript, `--mount "$sluice_hosts:/etc/hosts:none:x-create=file,bind"`) {
		t.Error("the exec script does not mount the hosts copy for enroot")
	}
}

// The site's enroot keys: EnrootPath is the program, EnrootPrefix the
// image prefix, EnrootDefaultOptions checked as the pods' options are,
// a refused one naming the key.
func TestNewSiteOptionsEnroot(t *testing.T) {
	o := enrootSiteOptions()
	if o.RuntimePath != "/opt/enroot/bin/enroot" || o.ImagePrefix != "docker://" || strings.Join(o.RuntimeOptions, " ") != "--root" {
		t.Errorf("got %+v", o)
	}
	_, err := NewSiteOptions(config.Site{ContainerRuntime: "enroot", Plugin: config.Plugin{EnrootDefaultOptions: []string{"--conf /x"}}})
	if err == nil || !strings.Contains(err.Error(), "Site.EnrootDefaultOptions: \"--conf\": --conf is refused") {
		t.Errorf("NewSiteOptions with --conf: %v", err)
	}
	if err := (&SiteOptions{RuntimeOptions: []string{"--rw"}}).checkScript(RuntimeApptainer); err == nil {
		t.Error("checkScript took an enroot option for apptainer")
	}
	if err := (&SiteOptions{RuntimeOptions: []string{"--rw"}}).checkScript(RuntimeCharliecloud); err == nil {
		t.Error("checkScript took an option for charliecloud")
	}
}
