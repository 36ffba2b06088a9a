package jobscript

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"text/template"
	"time"

	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/site"
)

//go:embed templates/*.sh.tmpl
var templateFS embed.FS

// scriptTemplate is the batch script. It is parsed once; a template that does
// not parse is a bug caught by every test of this package.
var scriptTemplate = template.Must(template.New("job.sh.tmpl").
	Option("missingkey=error").
	Funcs(template.FuncMap{"q": site.Quote}).
	ParseFS(templateFS, "templates/*.sh.tmpl"))

// ScriptOptions are the site's side of a batch script.
type ScriptOptions struct {
	// JobDir is the job's directory on the site (see JobDir): an absolute
	// path of letters, digits and ._/@+=_- only, as it is written into
	// #SBATCH lines and container binds.
	JobDir string
	// Runtime runs the containers.
	Runtime Runtime
	// Site holds the site's interpreter, command prefix, runtime program
	// and options. The zero value has none.
	Site SiteOptions
}

// Script renders the batch script of job. The script (POSIX sh):
//
//   - names the job after the pod UID, sends its own output to job.out, runs
//     in the job directory, carries the comment the site's template gives
//     (SiteOptions.Comment; none by default: squeue shows comments to every
//     user of the site), and asks for the job's resources and extra flags in
//     #SBATCH lines;
//   - writes job.id; for a job with a reverse tunnel (Job.Reverse), makes
//     its socket directory, starts its relay and waits for the tunnel (see
//     ReverseJob); runs the pre-exec snippet as it is (eval), in the
//     script's own shell rather than a subshell, so that what it exports
//     (modules, APPTAINER_BIND) reaches the containers; a non-zero status
//     fails the job; makes the job's directories;
//   - runs the init containers one after the other, ending with the exit code
//     of the first that fails, then the containers together; each container's
//     output goes to <name>.log, every line stamped with the UTC time, its
//     start and finish times to <name>.time, and its exit code to
//     <name>.exit;
//   - passes SIGTERM and SIGINT on to the running containers as SIGTERM;
//   - exits 0 when every container succeeded, else with the exit code of the
//     first container (in the pod's order) that failed, and writes job.exit
//     last.
func Script(job *Job, opts ScriptOptions) ([]byte, error) {
	data, err := newScriptData(job, opts)
	if err != nil {
		return nil, fmt.Errorf("render job script: %w", err)
	}
	var b bytes.Buffer
	if err := scriptTemplate.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render job script: %w", err)
	}
	if err := checkRendered(b.Bytes()); err != nil {
		return nil, fmt.Errorf("render job script: %w", err)
	}
	return b.Bytes(), nil
}

// scriptData fills templates/job.sh.tmpl.
type scriptData struct {
	MPI                  bool   // the containers run under mpiexec
	Shell                string // the #! interpreter
	CommandPrefix        string
	FlavorFlags          []string
	UID, Namespace, Name string
	Comment              string // sbatch --comment, "" for none
	JobDir               string
	Resources            Resources
	Time                 string // --time, empty for none
	Flags                []string
	PreExec              string
	Binary               string // the runtime's program, empty for RuntimeNone
	NeedsUser            bool   // ch-run needs USER
	Dirs                 []string
	Init, Containers     []containerData
	ExitFiles            []string     // job.exit and every container's exit and time files, removed at start
	Reverse              *reverseData // the reverse tunnel, nil for none
	// ProbeRelay is the relay binary that checks the owned probes
	// (Job.Relay), "" for none; ProbeEntry the forward entry's name in
	// the socket directory, for a job whose relay serves it, "" for none.
	ProbeRelay, ProbeEntry string
	Enroot                 []enrootContainer // enroot's containers to make, nil for other runtimes

	OutFile, IDFile, ExitFile string
	LogSuffix, ExitSuffix     string
	TimeSuffix, ReadySuffix   string
	StartedSuffix             string
	RestartsSuffix            string
	KilledSuffix              string
	Probes                    bool // a container has a probe or a hook
	PreStop                   bool // a container has a preStop hook
	// Keep: a container has a liveness or startup probe or a postStart
	// hook, which can kill it (sluice_keep); PostStart: a container has
	// a postStart hook. Restart and Grace are the job's.
	Keep, PostStart bool
	Restart         RestartPolicy
	Grace           int32
}

// containerData is one call of sluice_run.
type containerData struct {
	Name    string
	EnvFile string // absolute, or empty
	Dir     string // the directory the script enters, for RuntimeNone
	// MPI puts mpiexec -np $SLURM_NTASKS and MPIFlags first.
	MPI      bool
	MPIFlags []string
	Runtime  bool   // Argv follows "$sluice_runtime"
	Verb     string // the runtime's first word (enroot's start), "" for none
	// HostsBind binds the reverse tunnel's hosts copy (ch-run -b, enroot
	// --mount) after Verb, before Argv, and gives enroot the relay's
	// variables: a fixed text (Runtime.hostsBind, Runtime.relayEnv).
	HostsBind string
	Argv      []string
	// Readiness is the container's readiness probe, PreStop its preStop
	// hook; nil for none.
	Readiness, PreStop *probeData
	// Liveness and Startup are its liveness and startup probes,
	// PostStart its postStart hook; nil for none. Keep: it has one of
	// them, and runs under sluice_keep.
	Liveness, Startup, PostStart *probeData
	Keep                         bool
}

// Gate is the file (in the script's temporary directory) whose process
// id the container's readiness and liveness probes wait for: "up", which
// its startup probe writes once it passed, or "pid", which sluice_run
// writes once the container started (and its postStart hook ran).
func (c containerData) Gate() string {
	if c.Startup != nil {
		return "up"
	}
	return "pid"
}

// probeData is one probe of a container (sluice_probe).
type probeData struct {
	*Probe
	Exec *containerData // an exec probe's command, run as a container's
}

func newScriptData(job *Job, opts ScriptOptions) (*scriptData, error) {
	if job == nil {
		return nil, errors.New("no job")
	}
	if err := checkScriptJob(job, opts); err != nil {
		return nil, err
	}
	if job.ChecksOwners() {
		// Not checked by FromPod: the provider sets Relay after it.
		if err := checkRelayPath(job.Relay); err != nil {
			return nil, fmt.Errorf("probes on the node's loopback are checked with the relay: %w", err)
		}
	}
	binary := opts.Runtime.Binary()
	if opts.Site.RuntimePath != "" && binary != "" {
		binary = opts.Site.RuntimePath
	}
	shell := opts.Site.Shell
	if shell == "" {
		shell = "/bin/sh"
	}
	comment, err := jobComment(opts.Site.Comment, job.Namespace, job.Name)
	if err != nil {
		return nil, err
	}
	d := &scriptData{
		MPI:   job.MPI,
		Shell: shell, CommandPrefix: opts.Site.CommandPrefix, FlavorFlags: job.FlavorFlags,
		UID: job.UID, Namespace: job.Namespace, Name: job.Name, Comment: comment,
		JobDir:    opts.JobDir,
		Resources: writtenResources(job),
		Time:      slurmTime(job.Resources.TimeLimit),
		Flags:     job.Flags,
		PreExec:   job.PreExec,
		Binary:    binary,
		NeedsUser: opts.Runtime == RuntimeCharliecloud,
		Dirs:      job.Dirs,
		OutFile:   JobOutFile, IDFile: JobIDFile, ExitFile: JobExitFile,
		LogSuffix: LogFile(""), ExitSuffix: ExitFile(""), TimeSuffix: TimeFile(""), ReadySuffix: ReadyFile(""),
		StartedSuffix: StartedFile(""), RestartsSuffix: RestartsFile(""), KilledSuffix: KilledFile(""),
		Restart: job.Restart, Grace: job.Grace,
		Reverse: newReverseData(job.Reverse, job.UID, opts.Runtime),
	}
	if job.ChecksOwners() {
		d.ProbeRelay = job.Relay
		if job.Reverse != nil && job.Reverse.RunsRelay() {
			d.ProbeEntry = relay.ForwardSocket
		}
	}
	hostsBind := ""
	switch {
	case d.Reverse != nil && d.Reverse.BindLine:
		hostsBind = opts.Runtime.hostsBind()
	case d.Reverse != nil && d.Reverse.Relay != "":
		hostsBind = opts.Runtime.relayEnv()
	}
	d.ExitFiles = append(d.ExitFiles, JobExitFile)
	if opts.Runtime == RuntimeEnroot {
		d.Enroot = newEnrootContainers(job, opts.JobDir)
	}
	for i := range job.Init {
		d.Init = append(d.Init, newContainerData(job, &job.Init[i], opts, hostsBind))
		d.ExitFiles = append(d.ExitFiles, ExitFile(job.Init[i].Name), TimeFile(job.Init[i].Name))
	}
	for i := range job.Containers {
		c := &job.Containers[i]
		cd := newContainerData(job, c, opts, hostsBind)
		d.ExitFiles = append(d.ExitFiles, ExitFile(c.Name), TimeFile(c.Name))
		if c.Readiness != nil {
			cd.Readiness = newProbeData(job, c, c.Readiness, opts, hostsBind)
			d.Probes = true
			d.ExitFiles = append(d.ExitFiles, ReadyFile(c.Name))
		}
		if c.PreStop != nil {
			cd.PreStop = newProbeData(job, c, c.PreStop, opts, hostsBind)
			d.Probes, d.PreStop = true, true
		}
		if c.kept() {
			cd.Keep = true
			d.Probes, d.Keep = true, true
			d.ExitFiles = append(d.ExitFiles, RestartsFile(c.Name), KilledFile(c.Name))
		}
		if c.Liveness != nil {
			cd.Liveness = newProbeData(job, c, c.Liveness, opts, hostsBind)
		}
		if c.Startup != nil {
			cd.Startup = newProbeData(job, c, c.Startup, opts, hostsBind)
			d.ExitFiles = append(d.ExitFiles, StartedFile(c.Name))
		}
		if c.PostStart != nil {
			cd.PostStart = newProbeData(job, c, c.PostStart, opts, hostsBind)
			d.PostStart = true
		}
		d.Containers = append(d.Containers, cd)
	}
	return d, nil
}

func newContainerData(job *Job, c *Container, opts ScriptOptions, hostsBind string) containerData {
	rtOpts := append(slices.Clip(opts.Site.RuntimeOptions), job.RuntimeOptions...)
	d := containerData{
		Name:      c.Name,
		MPI:       job.MPI,
		MPIFlags:  job.MPIFlags,
		Runtime:   opts.Runtime != RuntimeNone,
		Verb:      opts.Runtime.verb(),
		HostsBind: hostsBind,
		Argv:      opts.Runtime.argv(c, opts.JobDir, rtOpts),
	}
	if c.EnvFile != "" {
		d.EnvFile = opts.JobDir + "/" + c.EnvFile
	}
	if opts.Runtime == RuntimeNone {
		d.Dir = c.WorkingDir
	}
	return d
}

// newProbeData is probe p of container c; an exec probe's command runs
// in c's image, with c's environment and binds, without mpiexec.
func newProbeData(job *Job, c *Container, p *Probe, opts ScriptOptions, hostsBind string) *probeData {
	d := &probeData{Probe: p}
	if p.Kind == ProbeExec {
		pc := *c
		pc.Command, pc.Args = p.Command, nil
		cd := newContainerData(job, &pc, opts, hostsBind)
		cd.MPI, cd.MPIFlags = false, nil
		d.Exec = &cd
	}
	return d
}

// checkScriptJob checks every value of job that reaches the script.
func checkScriptJob(job *Job, opts ScriptOptions) error {
	if err := opts.Runtime.Validate(); err != nil {
		return err
	}
	if err := CheckJobDir(opts.JobDir); err != nil {
		return err
	}
	for _, err := range []error{CheckNamespace(job.Namespace), checkPodName(job.Name), CheckUID(job.UID)} {
		if err != nil {
			return err
		}
	}
	if len(job.Containers) == 0 {
		return errors.New("job has no containers")
	}
	seen := map[string]bool{}
	for _, cs := range [][]Container{job.Init, job.Containers} {
		for i := range cs {
			if err := opts.Runtime.checkContainer(&cs[i]); err != nil {
				return err
			}
			if err := cs[i].checkProbes(); err != nil {
				return fmt.Errorf("container %s: %w", cs[i].Name, err)
			}
			if seen[cs[i].Name] {
				return fmt.Errorf("container name %q is used twice", cs[i].Name)
			}
			seen[cs[i].Name] = true
		}
	}
	if err := checkRestart(job); err != nil {
		return err
	}
	for _, f := range append(slices.Clip(job.FlavorFlags), job.Flags...) {
		if err := opts.Site.Sbatch.ValidateFlag(f); err != nil {
			return err
		}
	}
	if err := opts.Site.checkScript(opts.Runtime); err != nil {
		return err
	}
	if err := checkRuntimeOptions(opts.Runtime, job.RuntimeOptions, optionsFromPod); err != nil {
		return err
	}
	if i, err := checkArgv(job.MPIFlags); err != nil {
		return fmt.Errorf("mpi flag %d %w", i, err)
	}
	for _, dir := range job.Dirs {
		if err := checkRelPath(dir); err != nil {
			return fmt.Errorf("job directory entry: %w", err)
		}
	}
	r := job.Resources
	if r.CPUs < 0 || r.MemoryMiB < 0 || r.GPUs < 0 || r.TimeLimit < 0 {
		return fmt.Errorf("negative resources %+v", r)
	}
	if err := checkScriptText(job.PreExec); err != nil {
		return fmt.Errorf("pre-exec %w", err)
	}
	if job.Reverse != nil {
		return job.Reverse.check(job.UID)
	}
	return nil
}

// slurmTime formats a time limit as sbatch --time reads it, D-HH:MM:SS,
// rounding up to the second; zero gives "".
func slurmTime(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	s := int64((d + time.Second - 1) / time.Second)
	return fmt.Sprintf("%d-%02d:%02d:%02d", s/86400, s%86400/3600, s%3600/60, s%60)
}
