// Package annotations parses and validates the pod annotations that shape an
// offloaded pod: the reverse tunnel (S5) and the refusals at creation (S6);
// and it holds the one table of interLink's annotations and what sluice does
// with each (known.go).
// The annotation names are those of interLink, kept unchanged so that a pod
// written for it works here. The package does no I/O.
package annotations

// Job annotations of interLink's Slurm plugin that sluice implements (S2).
const (
	// Flags adds sbatch options, split as interLink splits them.
	Flags = "slurm-job.vk.io/flags"
	// PreExec is a shell snippet run before the containers.
	PreExec = "slurm-job.vk.io/pre-exec"
	// Flavor names the site flavor of the pod's job (Site.Flavors).
	Flavor = "slurm-job.vk.io/flavor"
	// SingularityMounts adds apptainer binds (--bind src:dst[:ro]).
	SingularityMounts = "slurm-job.vk.io/singularity-mounts"
	// SingularityOptions adds apptainer options (--nv).
	SingularityOptions = "slurm-job.vk.io/singularity-options"
	// EnrootMounts adds enroot mounts (--mount src:dst[:type[:opts]]).
	EnrootMounts = "slurm-job.vk.io/enroot-mounts"
	// EnrootOptions adds enroot start options (--rw, --env K=V).
	EnrootOptions = "slurm-job.vk.io/enroot-options"
	// MPIFlags runs each container under mpiexec -np $SLURM_NTASKS with
	// these flags.
	MPIFlags = "slurm-job.vk.io/mpi-flags"
	// ImageRoot replaces the site's image prefix (Site.ImagePrefix).
	ImageRoot = "slurm-job.vk.io/image-root"
)

// ShadowSameNS ("true") makes the pod's shadow in the pod's own namespace
// instead of <namespace>-shadow (interLink's virtual kubelet).
const ShadowSameNS = "interlink.eu/shadow-same-ns"

// Reverse tunnel annotations (S5).
const (
	// ReverseForwards lists the cluster endpoints the job reaches:
	// "minio:9000 redis:6379 kubernetes.default.svc.cluster.local:443".
	ReverseForwards = "interlink.eu/reverse-forwards"
	// ReverseBind overrides the loopback address the job's relay holds.
	ReverseBind = "interlink.eu/reverse-bind"
	// ReverseSocksPort asks for a SOCKS5 proxy on 127.0.0.1 of the node.
	ReverseSocksPort = "interlink.eu/reverse-socks-port"
)

// Retired reverse tunnel annotations. They were never released; pods setting
// them are neither refused nor affected: owner-only is not optional, and the
// carrier is the site's choice (Network.SSH.Reverse.NodeExec).
const (
	RetiredReverseOwnerOnly = "interlink.eu/reverse-owner-only"
	RetiredReverseNodeExec  = "interlink.eu/reverse-node-exec"
)

// PodVPN disables the shadow, as in interLink: any non-empty value counts,
// "false" included (see HasPodVPN).
const PodVPN = "interlink.eu/pod-vpn"

// Kept containers (S3): the init containers and containers these annotations
// list run in the shadow, in the cluster, instead of in the job.
const (
	DisableOffloadInitContainers = "interlink.eu/disable-offload-init-containers"
	DisableOffloadContainers     = "interlink.eu/disable-offload-containers"
)

// HasPodVPN reports whether the pod sets PodVPN. interLink disables the
// shadow for any non-empty value, so any non-empty value counts here too,
// including "false" and "0": a pod written for interLink with such a value
// runs there without a shadow, and must not silently get one here.
func HasPodVPN(annotations map[string]string) bool {
	return annotations[PodVPN] != ""
}
