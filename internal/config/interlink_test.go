package config

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// placeholderLine is a line of an imported configuration that is to be
// filled in: its key and the placeholder.
var placeholderLine = regexp.MustCompile(`(?m)^(\s*)(\w+): '?` + regexp.QuoteMeta(Placeholder) + `[^\n]*$`)

// fillPlaceholders gives each placeholder of an imported configuration the
// value a reader would, by key.
func fillPlaceholders(t *testing.T, y []byte) []byte {
	t.Helper()
	values := map[string]string{
		"NodeName": "hpc-a", "DataRoot": "/scratch/alice/.sluice", "ContainerRuntime": "apptainer",
		"LoginHost": "login.example.org", "User": "alice", "KeyFile": "/etc/sluice/id_ed25519", "KnownHostsFile": "/etc/sluice/known_hosts",
	}
	return placeholderLine.ReplaceAllFunc(y, func(line []byte) []byte {
		m := placeholderLine.FindSubmatch(line)
		v, ok := values[string(m[2])]
		if !ok {
			t.Errorf("no value for the placeholder of %s", m[2])
		}
		return []byte(string(m[1]) + string(m[2]) + ": " + v)
	})
}

func TestImportInterLink(t *testing.T) {
	for _, tc := range []struct {
		file      string
		notes     []string // each note holds one of these, in this order
		runtime   string
		dataRoot  string
		check     func(t *testing.T, c *Config)
		filledNum int
	}{
		{
			file: "example.yaml",
			notes: []string{
				"BashPath", // no note: carried
				"DataRootFolder: \".local/interlink/jobs/\" is relative",
				"ErrorsOnlyLogging: not carried over: sluice-vk --log-level error",
				"Namespace: not carried over",
				"SbatchPath: not carried over: sluice runs sbatch",
				"ScancelPath: not carried over", "SidecarPort: not carried over: sluice has no plugin process",
				"Socket: not carried over", "SqueuePath: not carried over",
				"Tsocks: not carried over: jobs reach the cluster's services through sluice's reverse tunnel",
				"TsocksLoginNode: not carried over", "TsocksPath: not carried over",
				"VerboseLogging: not carried over: sluice-vk --log-level debug",
			},
			runtime: "singularity", filledNum: 6,
			check: func(t *testing.T, c *Config) {
				p := c.Site.Plugin
				if p.BashPath != "/bin/bash" || p.SingularityPath != "singularity" || !p.ExportsPodData() || p.ImageRoot() != "" {
					t.Errorf("got %+v", p)
				}
			},
		},
		{
			file: "flavors.yaml",
			notes: []string{
				"DefaultUID: not carried over: every job runs as the site's user",
				"Flavors.gpu-nvidia.UID: not carried over",
			},
			runtime: "singularity", dataRoot: "/scratch/alice/.interlink/jobs", filledNum: 5,
			check: func(t *testing.T, c *Config) {
				p := c.Site.Plugin
				g := p.Flavors["gpu-nvidia"]
				if p.DefaultFlavor != "default" || len(p.Flavors) != 3 || g.CPUDefault != 8 || g.MemoryDefault != "64G" || g.UID != nil ||
					strings.Join(g.SlurmFlags, " ") != "--gres=gpu:1 --partition=gpu --time=04:00:00" {
					t.Errorf("got flavors %+v", p.Flavors)
				}
				if p.ImagePrefix != "docker://" || p.CommandPrefix != "module load apptainer" || strings.Join(p.SingularityDefaultOptions, " ") != "--nv --no-eval --containall" || !p.EnableProbes {
					t.Errorf("got %+v", p)
				}
			},
		},
		{
			file:    "enroot.yaml",
			notes:   []string{"DataRootFolder"},
			runtime: "enroot", filledNum: 6,
			check: func(t *testing.T, c *Config) {
				p := c.Site.Plugin
				if p.EnrootPath != "enroot" || strings.Join(p.EnrootDefaultOptions, " ") != "--rw" {
					t.Errorf("got %+v", p)
				}
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/interlink/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			im, err := ImportInterLink(data)
			if err != nil {
				t.Fatalf("ImportInterLink: %v", err)
			}
			all := strings.Join(im.Notes, "\n")
			for _, n := range tc.notes {
				if n == "BashPath" {
					if strings.Contains(all, "BashPath") {
						t.Errorf("BashPath is carried over, yet noted:\n%s", all)
					}
					continue
				}
				if !strings.Contains(all, n) {
					t.Errorf("no note says %q; the notes:\n%s", n, all)
				}
			}
			// As printed, the configuration is refused for its placeholders.
			if _, err := Parse(im.YAML); err == nil {
				t.Errorf("the imported configuration passes with its placeholders:\n%s", im.YAML)
			}
			if n := len(placeholderLine.FindAll(im.YAML, -1)); n != tc.filledNum {
				t.Errorf("got %d placeholders; want %d:\n%s", n, tc.filledNum, im.YAML)
			}
			c, err := Parse(fillPlaceholders(t, im.YAML))
			if err != nil {
				t.Fatalf("filled in, the imported configuration is refused: %v\n%s", err, im.YAML)
			}
			if c.Site.ContainerRuntime != tc.runtime || (tc.dataRoot != "" && c.Site.DataRoot != tc.dataRoot) {
				t.Errorf("got runtime %q DataRoot %q; want %q, %q", c.Site.ContainerRuntime, c.Site.DataRoot, tc.runtime, tc.dataRoot)
			}
			tc.check(t, c)
		})
	}
}

func TestImportInterLinkRefuses(t *testing.T) {
	for _, in := range []string{"", "- a\n- b\n", "Flavors: [1]\n", "ExportPodData: maybe\n"} {
		if im, err := ImportInterLink([]byte(in)); err == nil {
			t.Errorf("ImportInterLink(%q) = %s; want an error", in, im.YAML)
		}
	}
	im, err := ImportInterLink([]byte("Frobnicate: 1\nContainerRuntime: docker\n"))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(im.Notes, "\n")
	for _, want := range []string{"Frobnicate: not a key of interLink's Slurm plugin that sluice knows", `ContainerRuntime: "docker" is not a runtime`} {
		if !strings.Contains(all, want) {
			t.Errorf("notes %q; want one with %q", im.Notes, want)
		}
	}
}

// Whatever interLink file is read, the import does not panic, and what it
// prints is YAML of sluice's configuration, with no key sluice lacks.
func FuzzImportInterLink(f *testing.F) {
	for _, name := range []string{"example.yaml", "flavors.yaml", "enroot.yaml"} {
		data, err := os.ReadFile("testdata/interlink/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("Flavors: {a: {UID: 1}}\nDataRootFolder: /x/../y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ImportInterLink(data)
		if err != nil {
			return
		}
		dec := yaml.NewDecoder(bytes.NewReader(im.YAML))
		dec.KnownFields(true)
		var c Config
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("ImportInterLink(%q) printed what sluice cannot read: %v\n%s", data, err, im.YAML)
		}
	})
}
