package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
)

// resultFiles matches the names of log, exit, time, readiness, started,
// restarts and killed files in a job directory: a DNS label (a container
// name, or "job") and .log, .exit, .time, .ready, .started, .restarts or
// .killed. Anything else a job leaves in its directory is not listed.
const resultFiles = `.*/[a-z0-9]([a-z0-9-]*[a-z0-9])?\.(exit|log|time|ready|started|restarts|killed)`

// jobName is the stem of the batch script's own exit file, job.exit.
const jobName = "job"

// exitGrep prints, for each exit (or readiness) file it is given,
// "<file>:<code>" for the first line that is an exit code (or 0 or 1), and nothing for a file that holds none.
// A job can write its exit files (it runs as the site account), so what it
// leaves there must neither block the scan nor fail it for every pod:
//
//   - -D skip opens every file with O_NONBLOCK and skips, after an fstat,
//     a named pipe or a device (find's -type f lists regular files, but one
//     can be swapped in, or for a link to one, before grep opens it);
//   - -x with a pattern of at most three digits prints at most a few bytes
//     per file, however large the file;
//   - grep's exit status 1 (no line matched) and 2 (a file vanished or could
//     not be read) mean only that those files say nothing yet; the scan
//     fails only if grep could not run at all.
const exitGrep = `grep -D skip -s -H -m 1 -x -E '[0-9]{1,3}' -- "$@"; [ "$?" -le 2 ]`

// timeGrep prints, for each time file it is given, "<file>:<start>[ <end>]"
// for the first line that holds a start time and maybe a finish time, in
// seconds since the epoch (see TimeFile), read with the care of exitGrep.
const timeGrep = `grep -D skip -s -H -m 1 -x -E '[0-9]{10,11}( [0-9]{10,11})?' -- "$@"; [ "$?" -le 2 ]`

// maxExitFile is the size (in bytes) under which an exit or time file is
// read: an exit code, or two times, and a newline, with room to spare.
const maxExitFile = "-64c"

// scanTimeout bounds the exit-file scan, which the status poll of every pod
// of the node waits for.
const scanTimeout = 2 * time.Minute

// scanCmd lists, in one command, the log files and the contents of the
// other result files of the job directories named under root, as lines
// "<dir>/<c>.log", "<dir>/<c>.exit:<code>", "<dir>/<c>.time:<times>",
// "<dir>/<c>.ready:<0|1>", "<dir>/<c>.started:<0|1>",
// "<dir>/<c>.restarts:<restarts>" and "<dir>/<c>.killed:<reason>". It
// walks root itself, so that a directory that is gone is simply not listed
// (find fails on a missing starting point), and skips every directory not
// named. root must hold no glob
// character (Client.check).
//
// Each directory under root is tested against the names until one
// matches: a node of n pods costs find n² name tests (seconds of the login
// node's CPU at 5,000 pods), which is why scan runs dirScanCmd first.
func scanCmd(root string, names []string) []string {
	args := []string{"find", root, "-mindepth", "1", "-maxdepth", "2", "-ignore_readdir_race", "("}
	args = append(args, resultExpr(root)...)
	args = append(args, ")", "-o", "(", "-path", root+"/*", "!", "(")
	for i, name := range names {
		if i > 0 {
			args = append(args, "-o")
		}
		args = append(args, "-name", name)
	}
	return append(args, ")", "-prune", ")")
}

// dirScanCmd lists what scanCmd lists, starting at the named directories
// themselves: find visits them alone, a cost of one directory each, but
// fails (exit status 1) when one is missing or cannot be read, having
// listed the others.
func dirScanCmd(root string, names []string) []string {
	args := make([]string, 0, len(names)+40)
	args = append(args, "find")
	for _, name := range names {
		args = append(args, root+"/"+name)
	}
	args = append(args, "-mindepth", "1", "-maxdepth", "1", "-ignore_readdir_race")
	return append(args, resultExpr(root)...)
}

// resultExpr is the expression of both scans that lists the result files
// in the job directories under root, and reads the small ones.
func resultExpr(root string) []string {
	return []string{"-path", root + "/*/*", "-type", "f", "-regextype", "posix-extended", "-regex", resultFiles,
		"(", "(", "-name", "*.exit", "-o", "-name", "*.ready", "-o", "-name", "*.started", ")", "(", "-size", maxExitFile, "-exec", "sh", "-c", exitGrep, "sh", "{}", "+", "-o", "-true", ")",
		"-o", "-name", "*.time", "(", "-size", maxExitFile, "-exec", "sh", "-c", timeGrep, "sh", "{}", "+", "-o", "-true", ")",
		"-o", "-name", "*.restarts", "(", "-size", maxExitFile, "-exec", "sh", "-c", restartsGrep, "sh", "{}", "+", "-o", "-true", ")",
		"-o", "-name", "*.killed", "(", "-size", maxExitFile, "-exec", "sh", "-c", killedGrep, "sh", "{}", "+", "-o", "-true", ")",
		"-o", "-print", ")"}
}

// maxScanLine bounds the command line of one scan, in bytes. sshd runs a
// command as one argument of the account's shell (sh -c "exec ..."), and
// Linux takes no argument over 128 KiB (MAX_ARG_STRLEN): the names of a
// few thousand job directories do not fit, so scan splits them.
const maxScanLine = 64 << 10

// scanBatches splits names so that the command line of either scan of a
// batch, as site.SSH sends it, stays within maxScanLine.
func scanBatches(root string, names []string) [][]string {
	fixed := len("exec ") + max(len(site.Join(scanCmd(root, nil))), len(site.Join(dirScanCmd(root, nil))))
	var batches [][]string
	start, size := 0, fixed
	for i, name := range names {
		// a name in either command: " -o -name <name>" or " <root>/<name>"
		n := max(len(" -o -name ")+len(site.Quote(name)), 1+len(site.Quote(root+"/"+name)))
		if size+n > maxScanLine && i > start {
			batches = append(batches, names[start:i])
			start, size = i, fixed
		}
		size += n
	}
	return append(batches, names[start:])
}

// dirFiles is what one job directory says of its containers.
type dirFiles struct {
	logs  map[string]bool     // containers that have a log
	exits map[string]int      // containers (and "job") with an exit code
	times map[string]runTimes // containers that wrote their times
	ready map[string]bool     // containers whose readiness probe said
	// started holds the containers whose startup probe said, restarts
	// those that were killed and ran again.
	started  map[string]bool
	restarts map[string]restarts
	killed   map[string]KillReason
}

// restarts is what a restarts file says.
type restarts struct {
	count int
	last  Termination
}

// parseScan parses the output of scanCmd for directories under root, keyed
// by directory. Lines it does not understand (an exit file being written,
// say) are left out: the next poll reads them again.
func parseScan(out []byte, root string) map[string]*dirFiles {
	prefix := strings.TrimSuffix(root, "/") + "/"
	dirs := make(map[string]*dirFiles)
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		base, file, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		dir := prefix + base
		d := dirs[dir]
		if d == nil {
			d = &dirFiles{logs: map[string]bool{}, exits: map[string]int{}, times: map[string]runTimes{}, ready: map[string]bool{},
				started: map[string]bool{}, restarts: map[string]restarts{}, killed: map[string]KillReason{}}
			dirs[dir] = d
		}
		if name, content, isRead := strings.Cut(file, ":"); isRead {
			if c, ok := strings.CutSuffix(name, ".time"); ok {
				t, err := parseTimes(content)
				if _, seen := d.times[c]; err == nil && !seen && isLabel(c) {
					d.times[c] = t
				}
				continue
			}
			if c, ok := strings.CutSuffix(name, ".ready"); ok {
				readFlag(d.ready, c, content)
				continue
			}
			if c, ok := strings.CutSuffix(name, ".started"); ok {
				readFlag(d.started, c, content)
				continue
			}
			if c, ok := strings.CutSuffix(name, ".restarts"); ok {
				n, last, err := parseRestarts(content)
				if _, seen := d.restarts[c]; err == nil && !seen && isLabel(c) {
					d.restarts[c] = restarts{n, last}
				}
				continue
			}
			if c, ok := strings.CutSuffix(name, ".killed"); ok {
				r, err := parseKillReason(content)
				if _, seen := d.killed[c]; err == nil && !seen && isLabel(c) {
					d.killed[c] = r
				}
				continue
			}
			c, ok := strings.CutSuffix(name, ".exit")
			code, err := parseSmall(strings.TrimSpace(content), 255)
			if _, seen := d.exits[c]; ok && err == nil && !seen && isLabel(c) {
				d.exits[c] = code
			}
			continue
		}
		if c, ok := strings.CutSuffix(file, ".log"); ok && isLabel(c) {
			d.logs[c] = true
		}
	}
	return dirs
}

// readFlag sets flags[c] from a file that holds 0 or 1, once.
func readFlag(flags map[string]bool, c, content string) {
	_, seen := flags[c]
	if (content == "0" || content == "1") && !seen && isLabel(c) {
		flags[c] = content == "1"
	}
}

// scan reads the results of the given job directories (all under
// DataRoot), in as few commands as their names fit (scanBatches): one for
// 800 or so pods. Directories that do not exist are not in the result.
//
// A job can fill its directory with files named like logs, until the scan's
// output passes the runner's limit, which would fail the scan, and the
// status, of every pod of the node. Directories whose scan goes over the
// limit are scanned again in halves, so that such a directory is found in
// a few more commands, logged and left out of the result on its own: its
// pod's status then comes from Slurm alone.
func (c *Client) scan(ctx context.Context, dirs []string) (map[string]*dirFiles, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, scanTimeout)
	defer cancel()
	names := make([]string, len(dirs))
	for i, dir := range dirs {
		names[i] = path.Base(dir)
	}
	files := make(map[string]*dirFiles, len(dirs))
	for _, batch := range scanBatches(c.DataRoot, names) {
		if err := c.scanInto(ctx, batch, files); err != nil {
			return nil, fmt.Errorf("read exit files: %w", err)
		}
	}
	return files, nil
}

// scanInto scans the named directories into files, halving a scan whose
// output was too long.
func (c *Client) scanInto(ctx context.Context, names []string, files map[string]*dirFiles) error {
	out, err := c.runScan(ctx, names)
	switch {
	case errors.Is(err, site.ErrOutputLimit) && len(names) > 1:
		half := len(names) / 2
		if err := c.scanInto(ctx, names[:half], files); err != nil {
			return err
		}
		return c.scanInto(ctx, names[half:], files)
	case errors.Is(err, site.ErrOutputLimit):
		c.logger().Warn("slurm: job directory too full to scan; its containers' results come from Slurm alone", "dir", path.Join(c.DataRoot, names[0]), "error", err)
		return nil
	case err != nil:
		return err
	}
	maps.Copy(files, parseScan(out, c.DataRoot))
	return nil
}

// runScan runs the scan of the named directories: dirScanCmd, and when it
// fails as find does on a directory that is gone or cannot be read (a pod
// deleted while the poll ran), scanCmd, which leaves out the directories
// that are gone as before.
func (c *Client) runScan(ctx context.Context, names []string) ([]byte, error) {
	out, err := c.Site.Run(ctx, nil, dirScanCmd(c.DataRoot, names)...)
	var exit *site.ExitError
	if errors.As(err, &exit) && exit.Code == 1 {
		return c.Site.Run(ctx, nil, scanCmd(c.DataRoot, names)...)
	}
	return out, err
}

// containers turns a directory's files into container results. A
// container has started when it has a log or a time file, and finished
// when it has an exit code; its readiness is known when its readiness file
// (written before it starts, for a container with a readiness probe) was
// read, and so is whether its startup probe passed; its restarts when its
// restarts file was; what killed it, for good, when its killed file was.
func (d *dirFiles) containers() map[string]ContainerStatus {
	cs := make(map[string]ContainerStatus)
	for name := range d.logs {
		if name != jobName {
			cs[name] = ContainerStatus{Started: true}
		}
	}
	for name, t := range d.times {
		if name != jobName {
			cs[name] = ContainerStatus{Started: true, StartedAt: t.start}
		}
	}
	for name, code := range d.exits {
		if name != jobName {
			cs[name] = ContainerStatus{Started: true, Finished: true, ExitCode: code, StartedAt: d.times[name].start}
		}
	}
	for name, c := range cs {
		if c.Finished {
			c.FinishedAt = d.times[name].end
			c.KilledBy = d.killed[name]
		}
		if r, ok := d.ready[name]; ok {
			c.Ready = &r
		}
		if s, ok := d.started[name]; ok {
			c.StartupPassed = &s
		}
		if r, ok := d.restarts[name]; ok {
			last := r.last
			c.RestartCount, c.LastTermination = r.count, &last
			// Between a killed run and the next, its time file holds
			// the killed run's end: the container waits for its restart.
			end := d.times[name].end
			c.BackOff = !c.Finished && !end.IsZero() && end.Equal(last.FinishedAt)
		}
		cs[name] = c
	}
	return cs
}

// isLabel reports whether a file stem may be a container name (or "job").
func isLabel(s string) bool { return jobscript.CheckDNSLabel("container", s) == nil }
