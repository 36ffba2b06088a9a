package doctor

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/sluice-hpc/sluice/internal/site"
)

// shellLine is what the login-shell check has the account's login shell
// run, as sshd runs every remote command of sluice's (SHELL -c LINE): sh's
// quoting (a quote that ends, is escaped and reopens single quotes;
// backslashes kept in them), a line break in quotes, command substitution
// and a parameter's default, all of which sluice's command lines and
// scripts hold. csh and tcsh refuse the quoted line break and $(…); fish
// reads backslashes in single quotes and has no ${…:-…}.
const shellLine = `printf '%s|' 'it'\''s' 'a\\b' "$(echo sub)" ${sluice_doctor_unset:-default} 'two
lines'`

// shellWant is what a POSIX shell prints for shellLine.
const shellWant = "it's|a\\\\b|sub|default|two\nlines|"

// loginShellFix is the login-shell line's fix.
const loginShellFix = "sluice's remote commands are POSIX sh command lines, which sshd (on the login node and on the compute nodes) " +
	"hands to the account's login shell: give the account a POSIX login shell (bash, sh, dash, ksh: chsh -s /bin/bash, " +
	"or the site's account service for directory accounts), or run sluice with an account that has one"

// loginShellCheck finds the site account's login shell (its passwd entry,
// else $SHELL, which sshd sets to it) and has it run shellLine. Over SSH
// the command line that starts it is itself read by the login shell, as
// every command of sluice's is.
func loginShellCheck(ctx context.Context, r site.Runner) Check {
	user := "the site account"
	if res := run(ctx, r, "id", "-un"); res.err == nil {
		user = clean(strings.TrimSpace(string(res.out)))
	}
	shell, from := "", ""
	if res := run(ctx, r, "getent", "passwd", user); res.err == nil {
		shell, from = passwdShell(res.out), "passwd"
	}
	if shell == "" {
		if res := run(ctx, r, "printenv", "SHELL"); res.err == nil {
			shell, from = strings.TrimSpace(string(res.out)), "$SHELL"
		}
	}
	if shell == "" {
		return Check{Name: "login-shell", Status: Warn, Found: "cannot tell the login shell of " + user + " (neither getent passwd nor $SHELL gave it)",
			Fix: "make sure the account's login shell is a POSIX shell (bash, sh, dash, ksh): " + loginShellFix}
	}
	if !path.IsAbs(shell) || path.Clean(shell) != shell || strings.ContainsFunc(shell, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return Check{Name: "login-shell", Status: Fail, Found: fmt.Sprintf("the login shell of %s (%s) is %q, not a clean absolute path", user, from, clean(shell)),
			Fix: loginShellFix}
	}
	return decideLoginShell(user, shell, from, run(ctx, r, shell, "-c", shellLine))
}

// passwdShell is the shell of a passwd entry (name:pw:uid:gid:gecos:home:
// shell), "" when the line is not one; an empty field is /bin/sh, as
// sshd and login read it.
func passwdShell(out []byte) string {
	line, _, _ := bytes.Cut(out, []byte("\n"))
	f := strings.Split(string(line), ":")
	if len(f) != 7 {
		return ""
	}
	if f[6] == "" {
		return "/bin/sh"
	}
	return f[6]
}

// decideLoginShell decides the login-shell line from what the shell
// printed for shellLine.
func decideLoginShell(user, shell, from string, res cmdResult) Check {
	c := Check{Name: "login-shell"}
	if res.err == nil && string(res.out) == shellWant {
		c.Status, c.Found = OK, fmt.Sprintf("the login shell of %s is %s (%s): it runs sluice's POSIX sh command lines", user, shell, from)
		return c
	}
	got := clean(brief(res))
	if res.err == nil {
		got = fmt.Sprintf("printed %q, want %q", clean(string(res.out)), shellWant)
	}
	c.Status, c.Fix = Fail, loginShellFix
	c.Found = fmt.Sprintf("the login shell of %s is %s (%s): it does not run a POSIX sh test line: %s", user, shell, from, got)
	return c
}
