// Package jobscript turns a pod into a Slurm batch job: FromPod makes it a
// Job, every reference it holds resolved, and Script renders the Job's batch
// script for the site's container runtime. It runs nothing: the Slurm client
// (internal/slurm) submits the script and reads back what it writes in the
// job directory (layout.go).
package jobscript

import (
	"io/fs"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// Annotations a pod may carry to shape its job.
const (
	// AnnotationFlags adds sbatch options, split as interLink splits them
	// (SplitFlags).
	AnnotationFlags = annotations.Flags
	// AnnotationPreExec is a shell snippet run before the containers.
	AnnotationPreExec = annotations.PreExec
	// AnnotationSingularityOptions and AnnotationSingularityMounts add
	// apptainer options and binds (checkApptainerOptions).
	AnnotationSingularityOptions = annotations.SingularityOptions
	AnnotationSingularityMounts  = annotations.SingularityMounts
	// AnnotationMPIFlags runs the containers under mpiexec.
	AnnotationMPIFlags = annotations.MPIFlags
	// AnnotationEnrootOptions and AnnotationEnrootMounts add enroot start
	// options and mounts (checkEnrootOptions).
	AnnotationEnrootOptions = annotations.EnrootOptions
	AnnotationEnrootMounts  = annotations.EnrootMounts
	// AnnotationImageRoot replaces the site's image prefix.
	AnnotationImageRoot = annotations.ImageRoot
)

// Runtime names the container runtime the site runs containers with.
type Runtime string

// The runtimes a site may use.
const (
	RuntimeApptainer    Runtime = "apptainer"
	RuntimeSingularity  Runtime = "singularity" // an alias of apptainer
	RuntimeCharliecloud Runtime = "charliecloud"
	RuntimeEnroot       Runtime = "enroot" // NVIDIA's: import, create, start
	RuntimeNone         Runtime = "none"   // the command runs directly on the node
)

// Job is a pod made ready for Slurm: everything its batch script needs, with
// every reference (ConfigMap, Secret, downward API) already resolved.
type Job struct {
	Namespace string
	Name      string
	// UID is the pod UID. It names the Slurm job and the job directory.
	UID string
	// Annotations are the pod's annotations the job was checked and made
	// with, those under interLink's prefixes: Submit keeps them in the job
	// directory, for Submitted to give back once the pod was patched and
	// the virtual kubelet restarted.
	Annotations map[string]string

	// Init containers run one after the other, stopping at the first failure;
	// then Containers run together.
	Init       []Container
	Containers []Container

	Resources Resources
	// Flavor is the name of the site flavor the job got, "" for none, and
	// FlavorFlags its sbatch options: written before Resources, which win
	// over them, as Flags win over both.
	Flavor      string
	FlavorFlags []string
	// Flags are extra sbatch flags (from AnnotationFlags), each validated.
	Flags []string
	// Warnings say what the job was made without (a flavor the site
	// lacks): the provider gives each as a Warning Event.
	Warnings []Warning
	// PreExec runs in the batch script before any container.
	PreExec string
	// RuntimeOptions are the pod's apptainer binds and options
	// (AnnotationSingularityMounts, AnnotationSingularityOptions), or its
	// enroot mounts and options (AnnotationEnrootMounts,
	// AnnotationEnrootOptions), checked, given after the site's
	// (SiteOptions.RuntimeOptions).
	RuntimeOptions []string
	// MPI runs every container under mpiexec -np $SLURM_NTASKS, with
	// MPIFlags after -np (AnnotationMPIFlags).
	MPI      bool
	MPIFlags []string
	// Reverse is the job's side of its tunnels (a reverse tunnel, the
	// relay's forward entry); nil for none. Its snippet runs before
	// PreExec.
	Reverse *ReverseJob
	// Relay is the relay binary on the site (Client.PlaceRelay), for the
	// job's probes and hooks on the node's loopback (Probe.Owned): each
	// check is sluice-relay --probe, which passes only when a listener of
	// the job's user answers, never another user's holding the port. A
	// job that has one (ChecksOwners) is not rendered without it.
	Relay string
	// Restart is the pod's restartPolicy, and Grace its grace period in
	// seconds (PreStopGrace): what becomes of a container that its
	// liveness or startup probe, or its postStart hook, kills. Set only
	// for a job with such a container. A container that ends by itself
	// is never run again: the job is a batch job.
	Restart RestartPolicy
	Grace   int32

	// Files are written into the job directory before submission:
	// volume contents and per-container environment files.
	Files []File
	// Dirs are directories, relative to the job directory, that the batch
	// script creates before any container starts: emptyDir volumes, and the
	// directory of every volume, so that an empty volume still mounts.
	Dirs []string
}

// Container is one container of a job.
type Container struct {
	Name  string
	Image string
	// Command replaces the image's entrypoint and Args its default arguments,
	// as in Kubernetes: with a Command, the command line is Command followed
	// by Args; without one, the image's entrypoint runs with Args (or with its
	// own default arguments when Args is empty too). Both are already
	// expanded ($(VAR) references resolved).
	Command    []string
	Args       []string
	WorkingDir string
	// EnvFile is the path, relative to the job directory, of the file that
	// holds the container's environment (in Files, mode 0600).
	EnvFile string
	// EnvNames are the names of the variables of EnvFile, in its order:
	// enroot takes each by name (--env NAME) from its own environment.
	EnvNames []string
	Mounts   []Mount
	// Readiness is the container's readiness probe, run by the batch
	// script; nil for none (the container is ready while it runs).
	Readiness *Probe
	// PreStop is the container's preStop hook, run by the batch script
	// when it is told to stop (SIGTERM), before the containers are; its
	// Timeout is the pod's grace period. nil for none.
	PreStop *Probe
	// Liveness and Startup are the container's liveness and startup
	// probes, PostStart its postStart hook (its Timeout the pod's grace
	// period); nil for none. Each can kill the container, which then runs
	// again as Job.Restart says.
	Liveness, Startup, PostStart *Probe
}

// ChecksOwners reports whether a probe or hook of the job is checked
// with the relay binary (Probe.Owned): the job needs Relay.
func (j *Job) ChecksOwners() bool {
	for _, c := range j.Containers {
		for _, p := range []*Probe{c.Readiness, c.Liveness, c.Startup, c.PreStop, c.PostStart} {
			if p != nil && p.Owned() {
				return true
			}
		}
	}
	return false
}

// kept reports whether c runs under sluice_keep: a probe or hook of it
// can kill it.
func (c *Container) kept() bool {
	return c.Liveness != nil || c.Startup != nil || c.PostStart != nil
}

// Mount binds a path of the job directory into a container.
type Mount struct {
	// Source is relative to the job directory.
	Source   string
	Target   string
	ReadOnly bool
}

// Resources become #SBATCH lines. Zero values are left to the site's defaults.
type Resources struct {
	CPUs      int64
	MemoryMiB int64
	GPUs      int64
	TimeLimit time.Duration
}

// File is a file of the job directory.
type File struct {
	// Path is relative to the job directory and never leaves it.
	Path string
	Data []byte
	Mode fs.FileMode
}
