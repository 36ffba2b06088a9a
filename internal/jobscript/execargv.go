package jobscript

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
)

// execScript runs, on the node inside the job's allocation, what `kubectl
// exec` asks: sluice-exec ENV_FILE DIR HOSTS_REF COMMAND... takes the
// container's environment from ENV_FILE (as the batch script's sluice_run
// does), enters DIR, and, when HOSTS_REF names the reverse tunnel's hosts
// copy, binds it over /etc/hosts as the job's containers have it (ch-run's
// -b, enroot start's --mount, or APPTAINER_BIND); then it execs COMMAND. Empty arguments are
// skipped.
const execScript = `set -a
# shellcheck source=/dev/null
if [ -n "$1" ]; then . "$1" || exit 126; fi
set +a
if [ -n "$2" ]; then cd "$2" || exit 126; fi
sluice_hosts=
if [ -n "$3" ] && [ -r "$3" ]; then read -r sluice_hosts <"$3"; fi
shift 3
if [ -n "$sluice_hosts" ] && [ -f "$sluice_hosts" ]; then
	case $1 in
	ch-run | */ch-run)
		sluice_bin=$1
		shift
		set -- "$sluice_bin" -b "$sluice_hosts:/etc/hosts" "$@"
		;;
	enroot | */enroot)
		sluice_bin=$1 sluice_verb=$2
		shift 2
		set -- "$sluice_bin" "$sluice_verb" --mount "$sluice_hosts:/etc/hosts:none:x-create=file,bind" "$@"
		;;
	*)
		sluice_bind=${APPTAINER_BIND:-${SINGULARITY_BIND:-}}
		APPTAINER_BIND=${sluice_bind:+$sluice_bind,}$sluice_hosts:/etc/hosts
		export APPTAINER_BIND
		;;
	esac
fi
exec "$@"`

// ExecOptions say which step to run a command in.
type ExecOptions struct {
	JobID string
	// Host is the job's batch host (a checked host name or IP literal).
	Host string
	// JobDir is the job's directory.
	JobDir string
	// TTY asks srun for a pseudo-terminal (--pty).
	TTY bool
	// Site gives the runtime's program (RuntimePath) and the site's
	// runtime options (apptainer's or enroot start's), as the job's
	// command lines have them.
	Site SiteOptions
	// RuntimeOptions are the pod's runtime options and mounts
	// (Job.RuntimeOptions), given after the site's.
	RuntimeOptions []string
}

// ExecArgv is the command line, run on the login node, that runs cmd in
// container c of a running job: srun into the job's allocation on its batch
// host (--overlap, one task), the container's environment, and the
// runtime's way into the container's image with its mounts and working
// directory (RuntimeNone: the working directory, else the job directory),
// and the runtime's program and options (apptainer's, or enroot start's)
// as the job's own command lines have them (o.Site, o.RuntimeOptions).
// Each word of it is to be quoted (site.Join); none is read by a shell on
// the way except the fixed execScript.
func (r Runtime) ExecArgv(c Container, cmd []string, o ExecOptions) ([]string, error) {
	if len(cmd) == 0 {
		return nil, errors.New("exec: no command")
	}
	if _, err := checkArgv(cmd); err != nil {
		return nil, fmt.Errorf("exec: command: %w", err)
	}
	argv, err := stepArgv(o.JobID, o.Host)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if err := r.checkContainer(&c); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	// Checked as the batch script checks them: the site's, then the pod's,
	// each by the grammar of the runtime they go to.
	if err := checkRuntimeOptions(r, o.Site.RuntimeOptions, optionsFromSite); err != nil {
		return nil, fmt.Errorf("exec: site %w", err)
	}
	if err := checkRuntimeOptions(r, o.RuntimeOptions, optionsFromPod); err != nil {
		return nil, fmt.Errorf("exec: pod %w", err)
	}
	rtOpts := append(slices.Clip(o.Site.RuntimeOptions), o.RuntimeOptions...)
	if o.TTY {
		argv = append(argv, "--pty")
	} else {
		argv = append(argv, "--unbuffered")
	}
	env, dir, hosts := "", "", o.JobDir+"/"+execHostsFile
	if c.EnvFile != "" {
		env = o.JobDir + "/" + c.EnvFile
	}
	if r == RuntimeNone {
		hosts = ""
		dir = o.JobDir
		if c.WorkingDir != "" {
			dir = c.WorkingDir
		}
	}
	argv = append(argv, "--", "/bin/sh", "-c", execScript, "sluice-exec", env, dir, hosts)
	if b := r.Binary(); b != "" {
		if o.Site.RuntimePath != "" {
			b = o.Site.RuntimePath
		}
		argv = append(argv, b)
	}
	if v := r.verb(); v != "" {
		// enroot start: a new process in the job's enroot container, as
		// apptainer exec and ch-run start one in the image.
		argv = append(argv, v)
	}
	c.Command, c.Args = cmd, nil
	return append(argv, r.argv(&c, o.JobDir, rtOpts)...), nil
}

// stepArgv is the start of the srun command line of a step in a running
// job, on its batch host: one task, beside the job's own steps.
func stepArgv(job string, host string) ([]string, error) {
	if job == "" || strings.ContainsFunc(job, func(r rune) bool { return r < '0' || r > '9' }) {
		return nil, fmt.Errorf("job id %q is not a number", job)
	}
	if err := hostname.CheckHost(host); err != nil {
		return nil, fmt.Errorf("batch host: %w", err)
	}
	return []string{"srun", "--jobid=" + job, "--overlap", "--nodelist=" + host,
		"--nodes=1", "--ntasks=1", "--quiet"}, nil
}
