package jobscript

import "path"

// The job directory, <DataRoot>/<namespace>-<pod uid>/, holds:
//
//	job.sh            the batch script
//	job.id            the Slurm job ID, written after submission
//	job.exit          the batch script's exit code, written when it ends
//	job.out           the batch script's own output (sbatch --output/--error)
//	<container>.log   the container's output, each line "<RFC 3339 UTC second> <line>"
//	<container>.exit  the container's exit code, written when it ends
//	<container>.time  "<start>" when the container starts, "<start> <end>"
//	                  before its exit file: seconds since the epoch
//	<container>.ready 1 or 0: whether its readiness probe passes (probes only)
//	<container>.started 0, then 1 once its startup probe passed (probes only)
//	<container>.restarts "<count> <code> <start> <end> <reason>": how often
//	                  its probes or postStart hook killed it and it ran
//	                  again, and how its last killed run ended (probes only)
//	<container>.killed the reason its probes or postStart hook killed it,
//	                  when it did not run again (probes only)
//	volumes/<name>/   volume contents
//	env/<container>   the container's environment (0600)
//	exec.hosts        the node-local path of the reverse tunnel's hosts copy
//	tunnel.salt       the pod's salt (ReverseJob.Salt), for a reverse tunnel (0600)
//	ports             the job's own: containerPort=actualPort lines for the
//	                  relay's forward entry (SLUICE_PORT_FILE, relay.ParsePortFile)
//	annotations.json  the annotations the job was made with (Job.Annotations, 0600)
//	enroot.rc         enroot's command script (the enroot runtime only)
//	<container>.sqsh  an image enroot imported, while the script unpacks it
//
// Container names are unique within a pod across init and regular containers,
// so one name never stands for two files.
const (
	ScriptFile  = "job.sh"
	JobIDFile   = "job.id"
	JobExitFile = "job.exit"
	JobOutFile  = "job.out"
	// execHostsFile holds the path of the reverse tunnel's hosts copy on
	// the node, for kubectl exec to bind it as the job's containers do.
	execHostsFile = "exec.hosts"
	// SaltFile holds the pod's salt, which names its socket directory and
	// derives its relay's address, for Submit to read back when it adopts
	// the job after a restart.
	SaltFile = "tunnel.salt"
	// PortFile is where the job reports the ports it picked at run time,
	// named to it by SLUICE_PORT_FILE and read by its relay.
	PortFile = "ports"
	// AnnotationsFile holds the annotations the job was made with, for
	// Submitted to give back after a restart.
	AnnotationsFile = "annotations.json"
)

// JobDir is the job directory of a pod.
func JobDir(dataRoot, namespace, uid string) string {
	return path.Join(dataRoot, namespace+"-"+uid)
}

// LogFile is the output file of a container, relative to the job directory.
func LogFile(container string) string { return container + ".log" }

// ExitFile is the exit-code file of a container, relative to the job directory.
func ExitFile(container string) string { return container + ".exit" }

// TimeFile is the file of a container's start and finish times, relative
// to the job directory.
func TimeFile(container string) string { return container + ".time" }

// ReadyFile is the file of a container's readiness, relative to the job
// directory.
func ReadyFile(container string) string { return container + ".ready" }

// StartedFile is the file that says whether a container's startup probe
// passed, relative to the job directory.
func StartedFile(container string) string { return container + ".started" }

// RestartsFile is the file of a container's restarts, relative to the job
// directory.
func RestartsFile(container string) string { return container + ".restarts" }

// KilledFile is the file of the reason a container was killed and not run
// again, relative to the job directory.
func KilledFile(container string) string { return container + ".killed" }

// LogTimeLayout is the layout of the timestamp that starts every log line.
const LogTimeLayout = "2006-01-02T15:04:05Z"
