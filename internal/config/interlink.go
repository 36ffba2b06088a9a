package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// interLinkPlugin is the configuration file of interLink's Slurm plugin
// (SlurmConfig.yaml), as its documentation writes it.
type interLinkPlugin struct {
	Plugin         `yaml:",inline"`
	VKConfigPath   string `yaml:"VKConfigPath"`
	SbatchPath     string `yaml:"SbatchPath"`
	ScancelPath    string `yaml:"ScancelPath"`
	SqueuePath     string `yaml:"SqueuePath"`
	SinfoPath      string `yaml:"SinfoPath"`
	SidecarPort    any    `yaml:"SidecarPort"`
	Socket         string `yaml:"Socket"`
	DataRootFolder string `yaml:"DataRootFolder"`
	// ContainerRuntime is singularity or enroot; if empty, singularity.
	ContainerRuntime string `yaml:"ContainerRuntime"`
}

// Placeholder starts the values ImportInterLink leaves for the reader to
// fill in; no such value passes Validate.
const Placeholder = "<fill in: "

// notCarried are the keys of interLink's plugin that have no sluice key,
// with the reason.
var notCarried = map[string]string{
	"VKConfigPath":          "sluice-vk is the virtual kubelet itself: it has no plugin process to configure",
	"SidecarPort":           "sluice has no plugin process: sluice-vk reaches the login node over SSH (Network.SSH)",
	"Socket":                "sluice has no plugin process: sluice-vk reaches the login node over SSH (Network.SSH)",
	"SbatchPath":            "sluice runs sbatch, squeue, sacct and scancel from the login node's PATH",
	"ScancelPath":           "sluice runs sbatch, squeue, sacct and scancel from the login node's PATH",
	"SqueuePath":            "sluice runs sbatch, squeue, sacct and scancel from the login node's PATH",
	"SinfoPath":             "sluice runs sbatch, squeue, sacct and scancel from the login node's PATH",
	"Namespace":             "sluice's pods are those bound to its node; Network.TenantNamespace restricts them to one namespace",
	"Tsocks":                "jobs reach the cluster's services through sluice's reverse tunnel (Network.SSH.Reverse), not tsocks",
	"TsocksPath":            "jobs reach the cluster's services through sluice's reverse tunnel (Network.SSH.Reverse), not tsocks",
	"TsocksLoginNode":       "jobs reach the cluster's services through sluice's reverse tunnel (Network.SSH.Reverse), not tsocks",
	"VerboseLogging":        "sluice-vk --log-level debug",
	"ErrorsOnlyLogging":     "sluice-vk --log-level error",
	"DefaultUID":            "every job runs as the site's user (Network.SSH.User)",
	"DefaultGID":            "every job runs as the site's user (Network.SSH.User)",
	"GangSchedulingEnabled": "sluice runs one job per pod; gang scheduling is not implemented",
	"GangTimeout":           "sluice runs one job per pod; gang scheduling is not implemented",
	"LauncherRegistryPath":  "sluice runs one job per pod; gang scheduling is not implemented",
}

// Imported is a sluice configuration made from interLink's plugin file.
type Imported struct {
	// YAML is the configuration, with Placeholder values where sluice
	// needs what the plugin's file does not say.
	YAML []byte
	// Notes say, key by key, what was not carried over and why, and
	// which values are to be filled in.
	Notes []string
}

// ImportInterLink reads the configuration file of interLink's Slurm plugin
// and writes the equivalent sluice configuration: the plugin keys under
// Site (Plugin), ContainerRuntime and DataRootFolder mapped, and
// placeholders for what sluice needs that the plugin's file does not hold
// (the node's name, the login node and its SSH credentials). Every key of
// the file that is not carried over gets a note saying why.
func ImportInterLink(data []byte) (*Imported, error) {
	var p interLinkPlugin
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("import interLink configuration: %w", err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil || keys == nil {
		return nil, errors.New("import interLink configuration: not a YAML mapping")
	}
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if why, ok := notCarried[k]; ok {
			note("%s: not carried over: %s", k, why)
		} else if !importedKeys[k] {
			note("%s: not a key of interLink's Slurm plugin that sluice knows; left out", k)
		}
	}

	site := map[string]any{"Access": string(AccessSSH)}
	switch rt := p.ContainerRuntime; rt {
	case "", "singularity":
		site["ContainerRuntime"] = "singularity"
	case "enroot":
		site["ContainerRuntime"] = "enroot"
	default:
		site["ContainerRuntime"] = Placeholder + "apptainer, singularity, charliecloud, enroot or none>"
		note("ContainerRuntime: %q is not a runtime of interLink's plugin", rt)
	}
	switch dr := p.DataRootFolder; {
	case dr != "" && path.IsAbs(dr) && !strings.Contains(dr, "$"):
		site["DataRoot"] = path.Clean(dr)
	default:
		site["DataRoot"] = Placeholder + "an absolute directory on the site's shared filesystem for the job directories>"
		if dr != "" {
			note("DataRootFolder: %q is relative to the plugin's working directory or holds a variable; Site.DataRoot is an absolute path", dr)
		}
	}
	for k, v := range pluginValues(&p.Plugin, note) {
		site[k] = v
	}
	doc := map[string]any{
		"NodeName": Placeholder + "the virtual node's name>",
		"Site":     site,
		"Network": map[string]any{"SSH": map[string]any{
			"LoginHost":      Placeholder + "the login node's host name>",
			"User":           Placeholder + "the site account>",
			"KeyFile":        Placeholder + "the private key's absolute path>",
			"KnownHostsFile": Placeholder + "the login node's pinned known_hosts, an absolute path>",
		}},
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("import interLink configuration: %w", err)
	}
	return &Imported{YAML: b.Bytes(), Notes: notes}, nil
}

// importedKeys are the keys of interLink's plugin that have a sluice key.
var importedKeys = map[string]bool{
	"Flavors": true, "DefaultFlavor": true, "CommandPrefix": true, "BashPath": true, "ExportPodData": true,
	"SingularityDefaultOptions": true, "ImagePrefix": true, "SingularityPrefix": true, "SingularityPath": true,
	"EnrootDefaultOptions": true, "EnrootPrefix": true, "EnrootPath": true, "ContainerRuntime": true, "DataRootFolder": true,
	"EnableProbes": true,
}

// pluginValues gives the plugin keys that are set, as the Site mapping
// holds them; a flavor's UID is left out, with a note.
func pluginValues(p *Plugin, note func(string, ...any)) map[string]any {
	out := map[string]any{}
	set := func(k string, v any, ok bool) { setIf(out, k, v, ok) }
	set("DefaultFlavor", p.DefaultFlavor, p.DefaultFlavor != "")
	set("CommandPrefix", p.CommandPrefix, p.CommandPrefix != "")
	set("BashPath", p.BashPath, p.BashPath != "")
	set("ExportPodData", p.ExportPodData, p.ExportPodData != nil)
	set("SingularityDefaultOptions", p.SingularityDefaultOptions, len(p.SingularityDefaultOptions) > 0)
	set("ImagePrefix", p.ImagePrefix, p.ImagePrefix != "")
	set("SingularityPrefix", p.SingularityPrefix, p.SingularityPrefix != "")
	set("SingularityPath", p.SingularityPath, p.SingularityPath != "")
	set("EnrootDefaultOptions", p.EnrootDefaultOptions, len(p.EnrootDefaultOptions) > 0)
	set("EnrootPrefix", p.EnrootPrefix, p.EnrootPrefix != "")
	set("EnrootPath", p.EnrootPath, p.EnrootPath != "")
	set("EnableProbes", p.EnableProbes, p.EnableProbes)
	if p.ExportPodData != nil && !*p.ExportPodData {
		note("ExportPodData: false: sluice refuses the pods that mount ConfigMap, Secret, projected or downward API volumes, where interLink runs them without")
	}
	if len(p.Flavors) > 0 {
		flavors := map[string]any{}
		for name, f := range p.Flavors {
			m := map[string]any{}
			set := func(k string, v any, ok bool) { setIf(m, k, v, ok) }
			set("Name", f.Name, f.Name != "")
			set("Description", f.Description, f.Description != "")
			set("CPUDefault", f.CPUDefault, f.CPUDefault != 0)
			set("MemoryDefault", f.MemoryDefault, f.MemoryDefault != "")
			set("SlurmFlags", f.SlurmFlags, len(f.SlurmFlags) > 0)
			if f.UID != nil {
				note("Flavors.%s.UID: not carried over: every job runs as the site's user (Network.SSH.User)", name)
			}
			flavors[name] = m
		}
		out["Flavors"] = flavors
	}
	return out
}

// setIf sets m[k] to v when ok.
func setIf(m map[string]any, k string, v any, ok bool) {
	if ok {
		m[k] = v
	}
}
