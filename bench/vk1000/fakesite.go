//go:build bench

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// fakeSite is a site.Runner in memory that behaves like a Slurm site whose
// jobs all start at once and sleep until told to end (complete). It counts
// every command it runs.
type fakeSite struct {
	root string // the data root
	host string // the batch host of every job

	mu     sync.Mutex
	files  map[string][]byte // by full path
	dirs   map[string]bool
	jobs   map[string]*fakeJob // by job ID
	byName map[string]*fakeJob // by job name (the pod UID)
	nextID int

	squeuePoll  atomic.Int64 // squeue with no selection: Status
	squeueOther atomic.Int64 // squeue --name / -j: Submit, Cancel
	find        atomic.Int64
	sacct       atomic.Int64
	sbatch      atomic.Int64
	scancel     atomic.Int64
	other       atomic.Int64

	longestMu sync.Mutex
	longest   map[string]int // the longest command line of each program, in bytes
}

type fakeJob struct {
	id, name, dir string
	state         string
	start, end    time.Time
	containers    []string
}

func newFakeSite(root, host string) *fakeSite {
	return &fakeSite{root: root, host: host, files: map[string][]byte{}, dirs: map[string]bool{"/": true},
		jobs: map[string]*fakeJob{}, byName: map[string]*fakeJob{}, nextID: 1000}
}

var _ site.Runner = (*fakeSite)(nil)

// counts is a snapshot of the command counters.
type counts struct {
	squeuePoll, squeueOther, find, sacct, sbatch, scancel, other int64
}

func (f *fakeSite) counts() counts {
	return counts{f.squeuePoll.Load(), f.squeueOther.Load(), f.find.Load(), f.sacct.Load(),
		f.sbatch.Load(), f.scancel.Load(), f.other.Load()}
}

func (c counts) sub(d counts) counts {
	return counts{c.squeuePoll - d.squeuePoll, c.squeueOther - d.squeueOther, c.find - d.find,
		c.sacct - d.sacct, c.sbatch - d.sbatch, c.scancel - d.scancel, c.other - d.other}
}

// program is the program a command line runs, past env and its assignments.
func program(args []string) (string, []string) {
	i := 0
	if len(args) > 0 && args[0] == "env" {
		for i = 1; i < len(args) && strings.Contains(args[i], "="); i++ {
		}
	}
	if i < len(args) {
		return args[i], args[i+1:]
	}
	return "", nil
}

// maxArgStrlen is Linux's MAX_ARG_STRLEN, with its terminating NUL: the
// longest single argument execve takes. sshd runs a command as one
// argument of the account's shell (sh -c "exec ..."): a longer command
// line fails there.
const maxArgStrlen = 32 * 4096

func (f *fakeSite) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prog, rest := program(args)
	if n := f.commandLine(prog, args); n >= maxArgStrlen {
		return nil, &site.ExitError{Args: args, Code: 1, Stderr: "/bin/sh: Argument list too long"}
	}
	switch prog {
	case "squeue":
		return f.squeue(rest), nil
	case "find":
		f.find.Add(1)
		return f.scan(rest), nil
	case "sacct":
		// every job stays in squeue here: sacct knows nothing more
		f.sacct.Add(1)
		return nil, nil
	case "sbatch":
		f.sbatch.Add(1)
		return f.submit(args, stdin)
	case "scancel":
		f.scancel.Add(1)
		f.cancel(rest)
		return nil, nil
	}
	f.other.Add(1)
	return nil, &site.ExitError{Args: args, Code: 127, Stderr: prog + ": command not found"}
}

// commandLine records and returns the length of the command line
// site.SSH sends for args.
func (f *fakeSite) commandLine(prog string, args []string) int {
	n := len("exec " + site.Join(args))
	f.longestMu.Lock()
	defer f.longestMu.Unlock()
	if f.longest == nil {
		f.longest = map[string]int{}
	}
	f.longest[prog] = max(f.longest[prog], n)
	return n
}

// longestLine is the longest command line of prog run so far, in bytes.
func (f *fakeSite) longestLine(prog string) int {
	f.longestMu.Lock()
	defer f.longestMu.Unlock()
	return f.longest[prog]
}

// squeue answers `squeue --me -h -t all -o %i<S>%T<S>%r<S>%B<S>%S<S>%e<S>%j<S>
// [--name=N | -j ID]`, S being the separator sluice chose for the call.
func (f *fakeSite) squeue(rest []string) []byte {
	var name, id, sep string
	for i, a := range rest {
		if a == "-o" && i+1 < len(rest) {
			sep, _, _ = strings.Cut(strings.TrimPrefix(rest[i+1], "%i"), "%")
		}
		if n, ok := strings.CutPrefix(a, "--name="); ok {
			name = n
		}
		if a == "-j" && i+1 < len(rest) {
			id = rest[i+1]
		}
	}
	if name == "" && id == "" {
		f.squeuePoll.Add(1)
	} else {
		f.squeueOther.Add(1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out bytes.Buffer
	line := func(j *fakeJob) {
		end := "N/A"
		if !j.end.IsZero() {
			end = strconv.FormatInt(j.end.Unix(), 10)
		}
		fields := []string{j.id, j.state, "None", f.host, strconv.FormatInt(j.start.Unix(), 10), end, j.name}
		fmt.Fprintf(&out, "%s%s\n", strings.Join(fields, sep), sep)
	}
	switch {
	case id != "":
		if j := f.jobs[id]; j != nil {
			line(j)
		}
	case name != "":
		if j := f.byName[name]; j != nil {
			line(j)
		}
	default:
		for _, j := range f.jobs {
			line(j)
		}
	}
	return out.Bytes()
}

// submit runs `sbatch --parsable <dir>/job.sh`: the job starts at once and
// its containers (read from the script's log redirections) start logging.
func (f *fakeSite) submit(args []string, stdin io.Reader) ([]byte, error) {
	if stdin == nil {
		return nil, &site.ExitError{Args: args, Code: 1, Stderr: "sbatch: error: no script on standard input"}
	}
	body, err := io.ReadAll(stdin)
	if err != nil {
		return nil, err
	}
	_, dir, ok := strings.Cut(string(body), "\n#SBATCH --chdir=")
	if !ok {
		return nil, &site.ExitError{Args: args, Code: 1, Stderr: "sbatch: error: the script has no --chdir"}
	}
	dir, _, _ = strings.Cut(dir, "\n")
	dir = strings.Clone(dir) // a substring would keep the whole script
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	j := &fakeJob{id: strconv.Itoa(f.nextID), dir: dir, state: "RUNNING", start: time.Now()}
	j.name = uidOf(path.Base(dir))
	j.containers = containerNames(string(body))
	for _, c := range j.containers {
		f.files[dir+"/"+c+".log"] = []byte{}
	}
	f.jobs[j.id] = j
	f.byName[j.name] = j
	return []byte(j.id + "\n"), nil
}

// uidOf is the pod UID in a job directory's name <namespace>-<uid>: the
// last five dash-separated fields.
func uidOf(base string) string {
	parts := strings.Split(base, "-")
	if len(parts) < 5 {
		return base
	}
	return strings.Join(parts[len(parts)-5:], "-")
}

// containerNames finds the containers of a job script in the line that
// clears their exit files before a (re)run: "rm -f -- job.exit <c>.exit...".
func containerNames(script string) []string {
	var names []string
	for _, line := range strings.Split(script, "\n") {
		rest, ok := strings.CutPrefix(line, "rm -f -- ")
		if !ok {
			continue
		}
		for _, field := range strings.Fields(rest) {
			if c, ok := strings.CutSuffix(field, ".exit"); ok && c != "job" {
				names = append(names, strings.Clone(c))
			}
		}
	}
	return names
}

func (f *fakeSite) cancel(rest []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range rest {
		if j := f.jobs[id]; j != nil && j.state == "RUNNING" {
			j.state, j.end = "CANCELLED", time.Now()
		}
	}
}

// complete ends the job of pod uid with exit code 0, as a batch script
// does: its containers' exit files, job.exit, then the state Slurm shows.
// It returns when it did.
func (f *fakeSite) complete(uid string) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.byName[uid]
	if j == nil {
		return time.Time{}, fmt.Errorf("fake site: no job named %s", uid)
	}
	for _, c := range j.containers {
		f.files[j.dir+"/"+c+".exit"] = []byte("0\n")
	}
	f.files[j.dir+"/job.exit"] = []byte("0\n")
	now := time.Now()
	j.state, j.end = "COMPLETED", now
	return now, nil
}

// scan answers the exit-file scan, listing the .log files and the contents
// of the .exit files of the job directories it names: the directories given
// as starting points (`find <root>/<dir>... -mindepth 1 ...`), or those
// named in a walk of the data root (`find <root> ... -name <dir> -o ...`).
func (f *fakeSite) scan(rest []string) []byte {
	var names []string
	for i, a := range rest {
		if name, ok := strings.CutPrefix(a, f.root+"/"); ok && !strings.Contains(name, "*") {
			names = append(names, name)
		}
		if a == "-name" && i+1 < len(rest) && !strings.Contains(rest[i+1], "*") {
			names = append(names, rest[i+1])
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out bytes.Buffer
	for _, name := range names {
		dir := f.root + "/" + name
		j := f.byName[uidOf(name)]
		if j == nil || j.dir != dir {
			continue
		}
		for _, file := range append(slices.Clone(j.containers), "job") {
			if data, ok := f.files[dir+"/"+file+".exit"]; ok {
				fmt.Fprintf(&out, "%s/%s.exit:%s\n", dir, file, strings.TrimSpace(string(data)))
			}
			if _, ok := f.files[dir+"/"+file+".log"]; ok {
				fmt.Fprintf(&out, "%s/%s.log\n", dir, file)
			}
		}
	}
	return out.Bytes()
}

func (f *fakeSite) MkdirAll(_ context.Context, p string, _ fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := p; d != "/"; d = path.Dir(d) {
		f.dirs[d] = true
	}
	return nil
}

func (f *fakeSite) WriteFile(_ context.Context, p string, data []byte, _ fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirs[path.Dir(p)] {
		return fmt.Errorf("write %s: %w", p, fs.ErrNotExist)
	}
	f.files[p] = slices.Clone(data)
	return nil
}

func (f *fakeSite) ReadAt(_ context.Context, p string, off int64, n int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.files[p]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
	}
	if off >= int64(len(data)) {
		return nil, nil
	}
	return slices.Clone(data[off:min(int64(len(data)), off+int64(n))]), nil
}

func (f *fakeSite) Stat(_ context.Context, p string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if data, ok := f.files[p]; ok {
		return fileInfo{name: path.Base(p), size: int64(len(data)), mode: 0o600}, nil
	}
	if f.dirs[p] {
		return fileInfo{name: path.Base(p), mode: fs.ModeDir | 0o700}, nil
	}
	return nil, fmt.Errorf("stat %s: %w", p, fs.ErrNotExist)
}

func (f *fakeSite) RemoveAll(_ context.Context, p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for q := range f.files {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(f.files, q)
		}
	}
	for q := range f.dirs {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(f.dirs, q)
		}
	}
	return nil
}

type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }
