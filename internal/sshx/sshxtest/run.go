package sshxtest

import (
	"testing"

	"golang.org/x/crypto/ssh"
)

// Run runs cmd in a new session of c and returns its output, stdout and
// stderr together through one writer (two copies into one bytes.Buffer
// race and lose output), and its error (an *ssh.ExitError for a non-zero
// exit).
func Run(t testing.TB, c *ssh.Client, cmd string) (string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}
