package slurm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
)

// fakeSite is a site.Runner in memory. It records every command, answers squeue,
// sacct, sbatch and scancel through handlers, and runs the exit-file scan
// (find) against its own files.
type fakeSite struct {
	mu    sync.Mutex
	files map[string]*fakeFile
	dirs  map[string]fs.FileMode
	calls [][]string
	// stdin is what each command was given on its standard input, by program.
	stdin map[string][]byte
	reads []readCall
	// readBytes is how many bytes of file content the fake has handed out.
	readBytes int64

	// handle answers a command other than find. If nil, commands fail.
	handle func(args []string) ([]byte, error)
}

// fakeFile is a file; a mode with a type bit (fs.ModeNamedPipe,
// fs.ModeSymlink) makes it a file no read may open, as a hostile job leaves.
type fakeFile struct {
	data []byte
	mode fs.FileMode
}

type readCall struct {
	off int64
	n   int
}

func newFakeSite() *fakeSite {
	return &fakeSite{files: map[string]*fakeFile{}, dirs: map[string]fs.FileMode{"/": 0o755}}
}

var _ site.Runner = (*fakeSite)(nil)

// program is the program a command line runs, past env and its assignments.
func program(args []string) string {
	i := 0
	if len(args) > 0 && args[0] == "env" {
		for i = 1; i < len(args) && strings.Contains(args[i], "="); i++ {
		}
	}
	if i < len(args) {
		return args[i]
	}
	return ""
}

// count is how many commands ran the program.
func (f *fakeSite) count(prog string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if program(c) == prog {
			n++
		}
	}
	return n
}

func (f *fakeSite) lastCall(prog string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if program(f.calls[i]) == prog {
			return f.calls[i]
		}
	}
	return nil
}

func (f *fakeSite) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in []byte
	if stdin != nil {
		var err error
		if in, err = io.ReadAll(stdin); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(args))
	if f.stdin == nil {
		f.stdin = map[string][]byte{}
	}
	f.stdin[program(args)] = in
	handle := f.handle
	f.mu.Unlock()
	if program(args) == "find" {
		return f.find(args)
	}
	if handle == nil {
		return nil, &site.ExitError{Args: args, Code: 127, Stderr: args[0] + ": command not found"}
	}
	return handle(args)
}

// exitLine and timeLine are the patterns of exitGrep and timeGrep.
var (
	exitLine = regexp.MustCompile(`^[0-9]{1,3}$`)
	timeLine = regexp.MustCompile(`^[0-9]{10,11}( [0-9]{10,11})?$`)
)

// find answers scanCmd and dirScanCmd as GNU find and grep would.
func (f *fakeSite) find(args []string) ([]byte, error) {
	root, names, starts, ok := scanned(args)
	if !ok {
		return nil, fmt.Errorf("fake find: unexpected command %q", args)
	}
	re := regexp.MustCompile("^" + resultFiles + "$")
	f.mu.Lock()
	defer f.mu.Unlock()
	missing := false
	if _, ok := f.dirs[root]; !ok && !starts {
		return nil, &site.ExitError{Args: args, Code: 1, Stderr: "find: No such file or directory"}
	}
	inDir := map[string][]string{}
	for p := range f.files {
		if re.MatchString(p) {
			inDir[path.Dir(p)] = append(inDir[path.Dir(p)], p)
		}
	}
	var out bytes.Buffer
	for _, name := range names {
		dir := root + "/" + name
		if _, ok := f.dirs[dir]; !ok && starts {
			missing = true // find: '<dir>': No such file or directory
		}
		files := inDir[dir]
		sort.Strings(files)
		for _, p := range files {
			ff := f.files[p]
			switch {
			case !ff.mode.IsRegular(): // -type f
			case (strings.HasSuffix(p, ".exit") || strings.HasSuffix(p, ".ready") || strings.HasSuffix(p, ".time")) && len(ff.data) < 64: // -size -64c
				line := exitLine
				if strings.HasSuffix(p, ".time") {
					line = timeLine
				}
				for _, l := range strings.Split(string(ff.data), "\n") {
					if line.MatchString(l) { // grep -m 1 -x
						fmt.Fprintf(&out, "%s:%s\n", p, l)
						break
					}
				}
			case strings.HasSuffix(p, ".exit") || strings.HasSuffix(p, ".ready") || strings.HasSuffix(p, ".time"):
			default:
				fmt.Fprintf(&out, "%s\n", p)
			}
		}
	}
	if missing {
		return nil, &site.ExitError{Args: args, Code: 1, Stderr: "find: No such file or directory"}
	}
	return out.Bytes(), nil
}

// scanned is the data root and the directory names of a scan, and whether
// it starts at the directories (dirScanCmd) rather than walking the root
// (scanCmd); ok is false for any other find.
func scanned(args []string) (root string, names []string, starts, ok bool) {
	if len(args) > 2 && args[2] == "-mindepth" {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-name" && !strings.Contains(args[i+1], "*") {
				names = append(names, args[i+1])
			}
		}
		if slices.Equal(args, scanCmd(args[1], names)) {
			return args[1], names, false, true
		}
		names = nil
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			break
		}
		root = path.Dir(a)
		names = append(names, path.Base(a))
	}
	return root, names, true, root != "" && slices.Equal(args, dirScanCmd(root, names))
}

func (f *fakeSite) MkdirAll(ctx context.Context, p string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := p; ; d = path.Dir(d) {
		if _, ok := f.files[d]; ok {
			return fmt.Errorf("mkdir %s: not a directory", d)
		}
		if _, ok := f.dirs[d]; !ok {
			f.dirs[d] = perm
		}
		if d == "/" {
			return nil
		}
	}
}

func (f *fakeSite) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.dirs[path.Dir(p)]; !ok {
		return fmt.Errorf("write %s: %w", p, fs.ErrNotExist)
	}
	f.files[p] = &fakeFile{data: slices.Clone(data), mode: perm}
	return nil
}

// put writes a file, making its directory.
func (f *fakeSite) put(p, data string) {
	_ = f.MkdirAll(context.Background(), path.Dir(p), 0o700)
	_ = f.WriteFile(context.Background(), p, []byte(data), 0o600)
}

// appendTo appends to a file, as a running job does.
func (f *fakeSite) appendTo(p, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p].data = append(f.files[p].data, data...)
}

func (f *fakeSite) file(p string) (*fakeFile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ff, ok := f.files[p]
	return ff, ok
}

// special puts a file of type typ (a named pipe, a symbolic link) at p, as
// a hostile job does.
func (f *fakeSite) special(p string, typ fs.FileMode) {
	f.put(p, "")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p].mode = typ | 0o600
}

// ReadAt reads as site.Runner says: a regular file only, at most n bytes.
func (f *fakeSite) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, readCall{off, n})
	ff, ok := f.files[p]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
	}
	if !ff.mode.IsRegular() {
		return nil, fmt.Errorf("read %s: %w (%v)", p, site.ErrNotRegular, ff.mode.Type())
	}
	if off >= int64(len(ff.data)) {
		return nil, nil
	}
	end := min(int64(len(ff.data)), off+int64(n))
	f.readBytes += end - off
	return slices.Clone(ff.data[off:end]), nil
}

// content is what a file holds, for tests to check.
func (f *fakeSite) content(p string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ff, ok := f.files[p]; ok {
		return string(ff.data)
	}
	return ""
}

// bytesRead is how many bytes of file content reads have returned.
func (f *fakeSite) bytesRead() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readBytes
}

func (f *fakeSite) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ff, ok := f.files[p]; ok {
		return fakeInfo{name: path.Base(p), size: int64(len(ff.data)), mode: ff.mode}, nil
	}
	if mode, ok := f.dirs[p]; ok {
		return fakeInfo{name: path.Base(p), mode: mode | fs.ModeDir}, nil
	}
	return nil, fmt.Errorf("stat %s: %w", p, fs.ErrNotExist)
}

func (f *fakeSite) RemoveAll(ctx context.Context, p string) error {
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

type fakeInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return i.size }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

// testLog collects log records and passes them to t.Logf.
type testLog struct {
	t    testing.TB
	mu   sync.Mutex
	msgs []string
}

func (l *testLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *testLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.t.Logf("%s %s%s", r.Level, r.Message, b.String())
	return nil
}
func (l *testLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *testLog) WithGroup(string) slog.Handler      { return l }

// seen is how many records carried msg.
func (l *testLog) seen(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

const testRoot = "/data/alice/.sluice"

// newTestClient is a Client over a fake site, logging to t.
func newTestClient(t testing.TB) (*Client, *fakeSite, *testLog) {
	f := newFakeSite()
	f.dirs[testRoot] = 0o700
	log := &testLog{t: t}
	c := &Client{
		Site:         f,
		DataRoot:     testRoot,
		Runtime:      jobscript.RuntimeNone,
		Logger:       slog.New(log),
		PollInterval: time.Millisecond,
	}
	return c, f, log
}

// exitErr is what a failed command gives.
func exitErr(args []string, code int, stderr string) error {
	return &site.ExitError{Args: args, Code: code, Stderr: stderr}
}

// allCalls returns every call of prog, in order.
func (f *fakeSite) allCalls(prog string) [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, c := range f.calls {
		if program(c) == prog {
			out = append(out, c)
		}
	}
	return out
}

// readCount is how many reads were made.
func (f *fakeSite) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reads)
}
