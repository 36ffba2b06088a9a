//go:build bench

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// loginSshd is the rig's login sshd: its override file (read first, the
// first value of an option wins), its log, and the rig.sh that restarts it.
type loginSshd struct {
	override, log, rigSh string
}

func newLoginSshd(rigDir, rigSh string) *loginSshd {
	return &loginSshd{
		override: filepath.Join(rigDir, "etc", "sshd_login.override.conf"),
		log:      filepath.Join(rigDir, "logs", "sshd-login.log"),
		rigSh:    rigSh,
	}
}

// set writes content to the override file and restarts the sshd. The
// caller holds the rig's lock (/tmp/sluice-rig.lock).
func (s *loginSshd) set(ctx context.Context, content string) error {
	if err := os.WriteFile(s.override, []byte(content), 0o644); err != nil {
		return fmt.Errorf("sshd override: %w", err)
	}
	out, err := exec.CommandContext(ctx, s.rigSh, "restart", "sshd-login").CombinedOutput()
	if err != nil {
		return fmt.Errorf("restart sshd-login: %w\n%s", err, out)
	}
	return nil
}

// offset is the log's size now: dropped counts the lines written after it.
func (s *loginSshd) offset() (int64, error) {
	st, err := os.Stat(s.log)
	if err != nil {
		return 0, fmt.Errorf("sshd log: %w", err)
	}
	return st.Size(), nil
}

// dropped counts the connections the sshd dropped past MaxStartups since
// the log had size from.
func (s *loginSshd) dropped(from int64) (int, error) {
	data, err := os.ReadFile(s.log)
	if err != nil {
		return 0, fmt.Errorf("sshd log: %w", err)
	}
	if from > int64(len(data)) {
		from = 0 // the log was started again
	}
	return bytes.Count(data[from:], []byte("past MaxStartups")), nil
}
