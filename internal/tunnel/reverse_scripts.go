package tunnel

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"

	jobrelay "github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/site"
)

// The shell scripts a reverse session runs on the node. Each takes its
// values as positional parameters, so the scripts are constant and every
// value reaches the shell quoted (shellCommand).
var (
	//go:embed scripts/reverse_prepare.sh
	prepareBody string
	//go:embed scripts/reverse_sshd_start.sh
	sshdStartBody string
	//go:embed scripts/reverse_clear.sh
	clearScript string
	//go:embed scripts/reverse_hold.sh
	holdScript string
	//go:embed scripts/reverse_sshd_file.sh
	sshdFileScript string
)

// The scripts that check the socket directory's root first, with the
// check the job's script makes too (jobrelay.RootCheckScript).
var (
	prepareScript   = jobrelay.RootCheckScript + prepareBody
	sshdStartScript = jobrelay.RootCheckScript + sshdStartBody
)

// shellCommand is the command line that runs script with /bin/sh on the
// node, args as its positional parameters. The login shell of the session
// only execs /bin/sh with quoted words.
func shellCommand(script string, args ...string) string {
	return "exec " + site.Join(append([]string{"/bin/sh", "-c", script, "sluice-reverse"}, args...))
}

// prepareCommand makes the socket directory and describes it
// (parseSocketDir).
func prepareCommand(dir string) string {
	return shellCommand(prepareScript, dir)
}

// clearCommand removes the sockets of eps left in dir, whose inode must
// still be inode.
func clearCommand(dir, inode string, eps []Endpoint) string {
	return shellCommand(clearScript, append([]string{dir, inode}, sockets(eps)...)...)
}

// holdCommand holds the session while dir, with inode, and the sockets of
// eps exist. It prints holdLine every second, then holdEnd and the reason.
func holdCommand(dir, inode string, eps []Endpoint) string {
	return shellCommand(holdScript, append([]string{dir, inode}, sockets(eps)...)...)
}

// sshdFileCommand writes its standard input to the file name of the
// user-space sshd in dir, whose inode must still be inode.
func sshdFileCommand(dir, inode, name string) string {
	return shellCommand(sshdFileScript, dir, inode, name)
}

// sshdCommand runs the user-space sshd sshd in inetd mode on the session's
// standard input and output, with options as its whole configuration, once
// dir (whose inode must still be inode) and its root are checked.
func sshdCommand(dir, inode, sshd string, options []string) string {
	return shellCommand(sshdStartScript, append([]string{dir, inode, sshd}, options...)...)
}

const (
	holdLine = "held"
	holdEnd  = "ended "
)

func sockets(eps []Endpoint) []string {
	names := make([]string, len(eps))
	for i, e := range eps {
		names[i] = e.socket()
	}
	return names
}

// socketDir is the socket directory as the prepare script describes it.
type socketDir struct {
	uid   string // the session user's uid
	inode string
	mode  string // as ls prints it: "drwx------"
	owner string // the owner's uid
}

// parseSocketDir reads the output of the prepare script: a "uid" line and
// a "dir" line holding `ls -ldin`. Other lines (a chatty shell start-up
// file) are ignored.
func parseSocketDir(out string) (socketDir, error) {
	var d socketDir
	var ls string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "uid "); ok {
			d.uid = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "dir "); ok {
			ls = v
		}
	}
	// inode, mode, links, owner, group, size, date…, name
	f := strings.Fields(ls)
	if d.uid == "" || len(f) < 5 {
		return socketDir{}, fmt.Errorf("socket directory: unexpected description %q", out)
	}
	d.inode, d.mode, d.owner = f[0], f[1], f[3]
	if !allDigits(d.uid) || !allDigits(d.inode) || !allDigits(d.owner) || len(d.mode) < 10 {
		return socketDir{}, fmt.Errorf("socket directory: unexpected description %q", out)
	}
	return d, nil
}

// check accepts a directory owned by the session's user that no one else
// may write to.
func (d socketDir) check() error {
	switch {
	case d.mode[0] != 'd':
		return fmt.Errorf("socket directory: not a directory (%s)", d.mode)
	case d.owner != d.uid:
		return fmt.Errorf("socket directory: owned by uid %s, not by the tunnel's user (uid %s)", d.owner, d.uid)
	case d.mode[5] != '-' || d.mode[8] != '-':
		return fmt.Errorf("socket directory: writable by group or others (%s)", d.mode)
	}
	return nil
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// errHoldEnded reports a session whose holder ended on the node: the socket
// directory or a socket is gone, or was replaced.
var errHoldEnded = errors.New("holder ended")
