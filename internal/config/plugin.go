package config

// Plugin holds the site keys of interLink's Slurm plugin that change what a
// job is, under their interLink names. They are read under Site.
type Plugin struct {
	// Flavors are named sets of job defaults, by name; DefaultFlavor names
	// the one a pod gets when it names none and asks for no GPU.
	Flavors       map[string]Flavor `yaml:"Flavors"`
	DefaultFlavor string            `yaml:"DefaultFlavor"`

	// CommandPrefix is shell text the batch script runs before the pod's
	// pre-exec snippet, in the script's shell (the site's modules, say).
	CommandPrefix string `yaml:"CommandPrefix"`
	// BashPath is the batch script's interpreter (its #! line). If empty,
	// /bin/sh: sluice's script is POSIX sh, which bash runs as well.
	BashPath string `yaml:"BashPath"`
	// ExportPodData says whether the pods' ConfigMap, Secret, projected
	// and downward API volumes are written to the site. If nil, true; when
	// false, a pod that mounts one is refused.
	ExportPodData *bool `yaml:"ExportPodData"`
	// EnableProbes runs the containers' readiness, liveness and startup
	// probes (exec, httpGet, tcpSocket) and their postStart and preStop
	// hooks inside the job, on the node; the pod's Ready condition then
	// follows them, and a container they kill runs again as restartPolicy
	// says. If false (the default), probes are not run, and a pod that has
	// some gets a Warning Event saying so.
	EnableProbes bool `yaml:"EnableProbes"`

	// SingularityDefaultOptions are given to every apptainer (singularity)
	// exec or run, before the pod's own options.
	SingularityDefaultOptions []string `yaml:"SingularityDefaultOptions"`
	// ImagePrefix is put before every image name that is not an absolute
	// path and does not start with it (docker://, or a directory of
	// unpacked images). SingularityPrefix is its older name: set one.
	ImagePrefix       string `yaml:"ImagePrefix"`
	SingularityPrefix string `yaml:"SingularityPrefix"`
	// SingularityPath is the apptainer (singularity) program: a name looked
	// up in the job's PATH, or an absolute path. If empty, the runtime's
	// own name.
	SingularityPath string `yaml:"SingularityPath"`

	// The enroot keys (ContainerRuntime enroot): the options given to every
	// enroot start before the pod's, the image prefix used instead of
	// ImagePrefix when set, and the enroot program (a name looked up in the
	// job's PATH, or an absolute path; if empty, enroot).
	EnrootDefaultOptions []string `yaml:"EnrootDefaultOptions"`
	EnrootPrefix         string   `yaml:"EnrootPrefix"`
	EnrootPath           string   `yaml:"EnrootPath"`
}

// Flavor is one of interLink's flavors: defaults for the job of a pod that
// asks for none, and sbatch options.
type Flavor struct {
	// Name repeats the flavor's key in Flavors, as interLink writes it; it
	// may be left empty.
	Name        string `yaml:"Name"`
	Description string `yaml:"Description"`
	// CPUDefault is the job's CPUs when the pod sets none.
	CPUDefault int64 `yaml:"CPUDefault"`
	// MemoryDefault is the job's memory when the pod sets none, as interLink
	// writes it: a number of bytes, or with K, M or G (KB, MB, GB), powers
	// of 1024.
	MemoryDefault string `yaml:"MemoryDefault"`
	// SlurmFlags are sbatch options, written before the pod's resources and
	// its slurm-job.vk.io/flags, which win over them.
	SlurmFlags []string `yaml:"SlurmFlags"`
	// UID is interLink's job user. sluice runs every job as the site's
	// user: a flavor that sets it is refused.
	UID *int64 `yaml:"UID"`
}

// ExportsPodData reports ExportPodData with its default.
func (p *Plugin) ExportsPodData() bool { return p.ExportPodData == nil || *p.ExportPodData }

// ImageRoot is ImagePrefix, or SingularityPrefix when only it is set.
func (p *Plugin) ImageRoot() string {
	if p.ImagePrefix != "" {
		return p.ImagePrefix
	}
	return p.SingularityPrefix
}
