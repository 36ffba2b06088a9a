package config

import (
	"strings"
	"testing"
)

// pluginSite is minimal with interLink's plugin keys under Site, as its
// documentation writes them.
const pluginSite = `
NodeName: hpc-a
Site:
  DataRoot: /scratch/alice/.sluice
  ContainerRuntime: apptainer
  CommandPrefix: "module load apptainer"
  BashPath: /bin/bash
  ExportPodData: true
  SingularityDefaultOptions: ["--nv", "--no-eval", "--containall"]
  ImagePrefix: "docker://"
  SingularityPath: apptainer
  DefaultFlavor: default
  Flavors:
    default:
      Name: default
      Description: "Standard CPU job (4 cores, 16GB RAM)"
      CPUDefault: 4
      MemoryDefault: "16G"
      SlurmFlags: ["--partition=cpu", "--time=01:00:00"]
    gpu-nvidia:
      Name: gpu-nvidia
      CPUDefault: 8
      MemoryDefault: "64G"
      SlurmFlags: ["--gres=gpu:1", "--partition=gpu"]
Network:
  SSH:
    LoginHost: 10.0.0.2
    User: alice
    KeyFile: /k
    KnownHostsFile: /kh
`

func TestPluginKeys(t *testing.T) {
	c, err := Parse([]byte(pluginSite))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	p := c.Site.Plugin
	if p.DefaultFlavor != "default" || len(p.Flavors) != 2 || p.Flavors["gpu-nvidia"].CPUDefault != 8 {
		t.Errorf("got flavors %+v default %q; want default and gpu-nvidia (8 CPUs)", p.Flavors, p.DefaultFlavor)
	}
	if p.ImageRoot() != "docker://" || !p.ExportsPodData() || p.BashPath != "/bin/bash" || len(p.SingularityDefaultOptions) != 3 {
		t.Errorf("got %+v", p)
	}
	c, err = Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Site.ExportsPodData() || c.Site.ImageRoot() != "" {
		t.Errorf("defaults: ExportsPodData %v ImageRoot %q; want true, \"\"", c.Site.ExportsPodData(), c.Site.ImageRoot())
	}
}

func TestPluginKeysRefused(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"default flavor missing", "DefaultFlavor: default", "DefaultFlavor: large", "Site.DefaultFlavor: names no flavor of Site.Flavors (default, gpu-nvidia)"},
		{"flavor name differs", "Name: gpu-nvidia", "Name: gpu", `Site.Flavors.gpu-nvidia.Name: must be the flavor's key "gpu-nvidia" or empty`},
		{"memory", `MemoryDefault: "64G"`, `MemoryDefault: "64Q"`, "Site.Flavors.gpu-nvidia.MemoryDefault: want a number of bytes"},
		{"cpu", "CPUDefault: 8", "CPUDefault: -1", "Site.Flavors.gpu-nvidia.CPUDefault: must be 0-1000000"},
		{"uid", "CPUDefault: 8", "CPUDefault: 8\n      UID: 2000", "Site.Flavors.gpu-nvidia.UID: sluice runs every job as the site's user"},
		{"empty flag", `["--gres=gpu:1", "--partition=gpu"]`, `["--gres=gpu:1", " "]`, "Site.Flavors.gpu-nvidia.SlurmFlags[1]: is empty"},
		{"bash path", "BashPath: /bin/bash", "BashPath: bash", `Site.BashPath: must be a clean absolute path`},
		{"command prefix", `CommandPrefix: "module load apptainer"`, `CommandPrefix: "module load\r\nx"`, "Site.CommandPrefix: holds a NUL byte or a CR LF"},
		{"prefix", `ImagePrefix: "docker://"`, `ImagePrefix: "docker:// x"`, "Site.ImagePrefix: must be printable ASCII without spaces"},
		{"both prefixes", `ImagePrefix: "docker://"`, "ImagePrefix: \"docker://\"\n  SingularityPrefix: /cvmfs/", "Site.SingularityPrefix: is the older name of Site.ImagePrefix"},
		{"program", "SingularityPath: apptainer", "SingularityPath: apptainer;x", "Site.SingularityPath: must be a clean absolute path"},
		{"option", `"--containall"]`, `"containall"]`, `Site.SingularityDefaultOptions[2]: must be an option (starting with '-')`},
		{"option runtime", "ContainerRuntime: apptainer", "ContainerRuntime: charliecloud", `Site.SingularityDefaultOptions: is for the apptainer and singularity runtimes`},
		{"enroot options runtime", "BashPath: /bin/bash", "BashPath: /bin/bash\n  EnrootDefaultOptions: [--rw]", `Site.EnrootDefaultOptions: is for the enroot runtime; Site.ContainerRuntime is "apptainer"`},
		{"unknown key", "BashPath: /bin/bash", "BashPth: /bin/bash", "field BashPth not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(pluginSite, tc.old) {
				t.Fatalf("%q is not in the test's site", tc.old)
			}
			_, err := Parse([]byte(strings.Replace(pluginSite, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want an error with %q", err, tc.want)
			}
		})
	}
}

func TestMemoryBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"": 0, "1024": 1024, "16G": 16 << 30, "16g": 16 << 30, "16GB": 16 << 30, "32000M": 32000 << 20,
		"512K": 512 << 10, "512kb": 512 << 10, " 2G ": 2 << 30, "1024B": 1024,
	} {
		f := Flavor{MemoryDefault: in}
		if got, err := f.MemoryBytes(); err != nil || got != want {
			t.Errorf("MemoryBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"G", "B", "-1G", "1.5G", "16Gi", "1T", "99999999999G", "0x10"} {
		f := Flavor{MemoryDefault: in}
		if got, err := f.MemoryBytes(); err == nil {
			t.Errorf("MemoryBytes(%q) = %d; want an error", in, got)
		}
	}
}
