package site

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

// describeScript prints the site's versions, one "key=value" line each.
//
//go:embed describe.sh
var describeScript string

// Info is what the virtual node reports of the site as its NodeInfo: the
// Slurm version, the container runtime's version, the login host's OS,
// kernel and machine. Every field is sanitized: printable ASCII only, at most
// maxInfoLen bytes; a field the site did not tell is "".
type Info struct {
	Slurm          string // "22.05.8"
	RuntimeVersion string // "0.31"
	OS             string // "Debian GNU/Linux 12 (bookworm)"
	Kernel         string // "6.1.0-27-amd64"
	// Machine is uname -m of the login host ("x86_64"; KubeArch names
	// it as Kubernetes does). Sites run one architecture on their login
	// and compute nodes, or split them by partition: then the login
	// node's is the one told.
	Machine string
}

const (
	// maxInfoLen bounds each field of Info.
	maxInfoLen = 64
	// maxDescribeOutput is the part of the script's output that is read.
	maxDescribeOutput = 4 << 10
)

// version is the first dotted version number in a command's output.
var version = regexp.MustCompile(`[0-9]+(\.[0-9]+)+([-+~][0-9A-Za-z.]+)?`)

// Describe reads Info from the site with one command. runtime is the
// container runtime's program (ch-run, apptainer, or a path), "" if the
// site runs none. The site's answer is not trusted: each command's first
// line is kept, cut to 200 bytes, by the script; an answer over
// maxDescribeOutput is an error (ErrOutputLimit) on the SSH and Local
// runners; each value is cut and stripped to printable ASCII.
func Describe(ctx context.Context, r Runner, runtime string) (Info, error) {
	out, err := RunBounded(ctx, r, maxDescribeOutput, "sh", "-c", describeScript, "sh", runtime)
	if err != nil {
		return Info{}, fmt.Errorf("describe site: %w", err)
	}
	return parseDescribe(out), nil
}

// parseDescribe reads the script's "key=value" lines; the first line of a
// key counts, unknown keys and other lines are ignored.
func parseDescribe(out []byte) Info {
	if len(out) > maxDescribeOutput {
		out = out[:maxDescribeOutput]
	}
	seen := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 512), maxDescribeOutput)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), "=")
		if _, dup := seen[key]; ok && !dup {
			seen[key] = value
		}
	}
	return Info{
		Slurm:          version.FindString(clean(seen["slurm"])),
		RuntimeVersion: version.FindString(clean(seen["runtime"])),
		Kernel:         clean(seen["kernel"]),
		Machine:        clean(seen["arch"]),
		OS:             clean(osName(seen["os"])),
	}
}

// osName is the value of os-release's PRETTY_NAME line, unquoted.
func osName(line string) string {
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME=")
	if !ok {
		return ""
	}
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v
}

// clean keeps the printable ASCII of s (no control bytes, no quotes or
// backslashes), with runs of spaces made one, cut to maxInfoLen bytes.
func clean(s string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s) && b.Len() < maxInfoLen; i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			space = b.Len() > 0
			continue
		case c < 0x20 || c > 0x7e || c == '"' || c == '\'' || c == '\\' || c == '`':
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
			if b.Len() == maxInfoLen {
				break
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// RunBounded runs args on r as Run does, reading at most max bytes of its
// standard output on the SSH and Local runners: more is an error
// (ErrOutputLimit), and is not read. Other runners' output is cut to max+1
// bytes, so that a caller can tell it was too long. It is for commands
// whose answer is untrusted and small: the site's own head(1) may not be
// what it says.
func RunBounded(ctx context.Context, r Runner, max int, args ...string) ([]byte, error) {
	switch r := r.(type) {
	case *SSH:
		return r.run(ctx, max, nil, args...)
	case *Local:
		return r.run(ctx, limitOr(max), nil, args...)
	}
	out, err := r.Run(ctx, nil, args...)
	if len(out) > max {
		out = out[:max+1]
	}
	return out, err
}
