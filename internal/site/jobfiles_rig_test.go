//go:build rig

package site

import (
	"testing"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestRigJobWrittenFiles reads what a hostile job can leave in its
// directory (named pipes, links to /dev/zero and to another pod's file)
// through the rig's real OpenSSH sftp-server, which serves one request at a
// time: every read is refused at once, and the same connection goes on
// serving file operations.
func TestRigJobWrittenFiles(t *testing.T) {
	rig := testrig.Load(t)
	r := newSSH(t, rigConfig(t, rig, rig.Get(t, "RIG_KNOWN_HOSTS")))
	testJobFiles(t, r, rigDir(t, rig, r))
}
