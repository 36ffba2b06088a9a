package doctor

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/slurm"
)

// probeScript is the probe job's program (probe.sh), run after the relay
// package's root check, which the job's script and the tunnel run too.
//
//go:embed probe.sh
var probeScript string

// The probe job.
const (
	probeNamespace = "sluice-doctor"
	probeContainer = "probe"
	// probeDone is the file, in the job directory, that tells the probe
	// the doctor is done with the node.
	probeDone = "doctor.done"
	// probeHold is how long the probe waits for probeDone, in seconds.
	probeHold = 120
	// probeTimeLimit is the job's time limit.
	probeTimeLimit = 5 * time.Minute
	// probeOutputLimit bounds what is read of the probe's output.
	probeOutputLimit = 64 << 10
	// probeReadyWait bounds the wait for the probe's "ready" once the job
	// runs.
	probeReadyWait = time.Minute
	// pollEvery is how often the job's state and output are read.
	pollEvery = 500 * time.Millisecond
)

// probeJob is the doctor's job: runtime none, one container running the
// probe with the socket directory root, the runtime's program and the
// done file as arguments (never pasted into the script).
func probeJob(uid, socketRoot, runtime, doneFile string) *jobscript.Job {
	return &jobscript.Job{
		Namespace: probeNamespace, Name: "probe", UID: uid,
		Containers: []jobscript.Container{{
			Name: probeContainer,
			Command: []string{"/bin/sh", "-c", relay.RootCheckScript + "\n" + probeScript, "sluice-doctor",
				socketRoot, runtime, doneFile, strconv.Itoa(probeHold)},
		}},
		Resources: jobscript.Resources{CPUs: 1, TimeLimit: probeTimeLimit},
	}
}

// probeResult is what the probe printed, each value as it came.
type probeResult struct {
	facts map[string]string
	ready bool
}

// maxProbeLine is the longest line of the probe's output that is kept.
const maxProbeLine = 4096

// parseProbe reads the probe's "key value" lines up to "ready". Unknown
// keys are kept (and unused); long lines are cut.
func parseProbe(out []byte) probeResult {
	r := probeResult{facts: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), probeOutputLimit+1)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > maxProbeLine {
			line = line[:maxProbeLine]
		}
		key, value, _ := strings.Cut(line, " ")
		if key == "ready" {
			r.ready = true
			break
		}
		if _, seen := r.facts[key]; !seen && key != "" {
			r.facts[key] = value
		}
	}
	return r
}

// readProbe reads the probe's output so far.
func readProbe(ctx context.Context, c *slurm.Client, ref slurm.JobRef) (probeResult, error) {
	rc, err := c.Logs(ctx, ref, probeContainer, slurm.LogOptions{Tail: -1, LimitBytes: probeOutputLimit})
	if err != nil {
		return probeResult{}, err
	}
	defer rc.Close()
	out, err := io.ReadAll(io.LimitReader(rc, probeOutputLimit))
	if err != nil {
		return probeResult{}, fmt.Errorf("read probe output: %w", err)
	}
	return parseProbe(out), nil
}

// decideRuntime decides the runtime line from the probe's runtime fact:
// "none", "ok PATH VERSION…" or "missing PROGRAM".
func decideRuntime(runtime, program, host, fact string) Check {
	c := Check{Name: "runtime"}
	kind, rest, _ := strings.Cut(fact, " ")
	switch {
	case runtime == string(jobscript.RuntimeNone):
		c.Status, c.Found = OK, "Site.ContainerRuntime none: commands run on "+host+" directly"
	case kind == "ok":
		where, version, _ := strings.Cut(rest, " ")
		if version == "" {
			version = "(no version printed)"
		}
		c.Status, c.Found = OK, runtime+" on "+host+": "+where+" "+version
	case kind == "missing":
		c.Status, c.Found = Fail, program+" not found in the PATH of jobs on "+host
		c.Fix = "install " + runtime + " on the compute nodes, or load it in Site.CommandPrefix (Site.SingularityPath names apptainer's program)"
	default:
		c.Status, c.Found = Warn, fmt.Sprintf("the probe said %q", fact)
		c.Fix = "run " + program + " --version in a job by hand"
	}
	return c
}

// probeDirName matches the directory mktemp made in the socket directory
// root.
var probeDirName = regexp.MustCompile(`^sluice-doctor\.[A-Za-z0-9]{6,16}$`)

// decideSocketDir decides the socket-dir line from the probe's sockroot
// fact: "ok DIR", "made DIR", "unusable WHY", "unsafe WHY" or "unset". It
// returns the probe's directory in root when there is one.
func decideSocketDir(root, host, fact string, reverse bool) (Check, string) {
	c := Check{Name: "socket-dir"}
	kind, rest, _ := strings.Cut(fact, " ")
	bad := Fail
	if !reverse {
		bad = Warn
	}
	switch kind {
	case "ok", "made":
		dir := path.Clean(rest)
		if path.Dir(dir) != root || !probeDirName.MatchString(path.Base(dir)) {
			c.Status, c.Found = Warn, fmt.Sprintf("the probe made an unexpected directory %q", rest)
			return c, ""
		}
		c.Status, c.Found = OK, "Site.SocketDirRoot "+root+" on "+host+" is safe and the job's user can make socket directories in it"
		if kind == "made" {
			c.Status = Warn
			c.Found = "Site.SocketDirRoot " + root + " was missing on " + host + "; the probe made it (mode 1777), as a job would"
			c.Fix = "have the site make " + root + " on every compute node, owned by root, mode 1777 (it is node-local)"
		}
		return c, dir
	case "unset":
		c.Status, c.Found = Warn, "Site.SocketDirRoot is not set: reverse tunnels are unavailable"
		c.Fix = "set Site.SocketDirRoot to a node-local directory such as /tmp/sluice"
	case "unusable", "unsafe":
		c.Status, c.Found = bad, "Site.SocketDirRoot "+root+" on "+host+" is "+kind+": "+rest
		c.Fix = "make " + root + " on every compute node owned by root, mode 1777, in directories only root can write (or choose another Site.SocketDirRoot)"
	default:
		c.Status, c.Found = Warn, fmt.Sprintf("the probe said %q", fact)
		c.Fix = "check Site.SocketDirRoot on a compute node by hand"
	}
	return c, ""
}

// decidePortStart decides the unprivileged-ports line from
// net.ipv4.ip_unprivileged_port_start: the job's relay binds each reverse
// forward's listen port as the job's user, so a port below it needs the
// listenport:host:port form with a higher listen port.
func decidePortStart(fact, host string, reverse bool) Check {
	c := Check{Name: "unprivileged-ports"}
	n, err := strconv.Atoi(strings.TrimSpace(fact))
	if err != nil || n < 0 || n > 65536 {
		c.Status, c.Found = Warn, fmt.Sprintf("net.ipv4.ip_unprivileged_port_start on %s: unreadable (%q)", host, fact)
		c.Fix = "read it with sysctl on a compute node: reverse forwards below it cannot be bound by the job's relay"
		return c
	}
	c.Found = fmt.Sprintf("net.ipv4.ip_unprivileged_port_start is %d on %s", n, host)
	switch {
	case n <= 1:
		c.Status, c.Found = OK, c.Found+": jobs may bind any port"
	case !reverse:
		c.Status, c.Found = OK, c.Found+" (reverse tunnels are off)"
	default:
		c.Status = Warn
		c.Found += fmt.Sprintf(": a reverse forward to a port below %d (kubernetes.default.svc:443) cannot be bound by the job's relay", n)
		c.Fix = fmt.Sprintf("pods give such forwards a listen port of %d or more (listenport:host:port), or the site lowers the sysctl on the compute nodes", n)
	}
	return c
}
