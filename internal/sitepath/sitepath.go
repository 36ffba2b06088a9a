// Package sitepath holds the rules for the site's paths that sluice pastes
// into batch scripts, #SBATCH lines and remote command lines: Site.DataRoot
// and the job directories under it, and Site.SocketDirRoot and the pods'
// socket directories under it. The configuration checks them once at
// start-up and the slurm package again for every job, with the same
// functions, so that a value taken at start-up is never refused at a pod.
package sitepath

import (
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/salt"
)

// Chars matches an absolute path of the characters a site path may hold.
// It is pasted into #SBATCH lines, where sbatch splits on spaces, quotes
// and '#' and treats '%' as a pattern; into apptainer binds, where ':' and
// ',' separate; and into ssh -R, where ':' separates.
var Chars = regexp.MustCompile(`^/[A-Za-z0-9._/@+=_-]*$`)

// Check reports a path that is not a clean absolute path of Chars below /.
func Check(p string) error {
	if !Chars.MatchString(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("%q must be a clean absolute path below / of letters, digits and ._/@+=_-", p)
	}
	return nil
}

// MaxSocketPath is the longest path a unix socket may have on Linux
// (sizeof(sun_path) - 1).
const MaxSocketPath = 107

// LongestSocketName is the longest name of a socket sluice makes in a pod's
// socket directory: the tunnel's socket for the relay's highest port.
var LongestSocketName = relay.SocketName(65535)

// PodUIDLength is the length of the UIDs the API server gives pods (UUIDs).
const PodUIDLength = len("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")

// socketDirNameSize is how many bytes of its derivation a salted socket
// directory's name holds: 128 bits, in 32 hex digits, fewer characters
// than the UID it stands for.
const socketDirNameSize = 16

// SocketDir is the socket directory of the pod uid under root. Its name is
// derived from the pod's salt (salt.Derive with salt.LabelSocketDir, the
// first 16 bytes in hex), so that another user of the node, who sees the
// uid in squeue, cannot make it before the job does. With podSalt "" (a job
// submitted before salts, adopted with none in its directory) it is the uid
// itself.
func SocketDir(root, uid, podSalt string) string {
	if podSalt == "" {
		return path.Join(root, uid)
	}
	sum := salt.Derive(podSalt, salt.LabelSocketDir, uid)
	return path.Join(root, hex.EncodeToString(sum[:socketDirNameSize]))
}

// CheckSocketRoot reports a SocketDirRoot that fails Check, or under which
// a socket of the pod uid, <root>/<uid>/<socket>, would not fit in a unix
// socket address (a salted SocketDir's name is shorter than a UID). With uid "", it checks for every pod the API server may
// send (a UID of PodUIDLength characters).
func CheckSocketRoot(root, uid string) error {
	if err := Check(root); err != nil {
		return err
	}
	what := "pod " + uid
	if uid == "" {
		uid = strings.Repeat("x", PodUIDLength)
		what = "a pod (UIDs have 36 characters)"
	}
	if n := len(root) + 1 + len(uid) + 1 + len(LongestSocketName); n > MaxSocketPath {
		return fmt.Errorf("%q is too long: the sockets of %s would have %d-byte paths, over the %d a unix socket allows (at most %d bytes)",
			root, what, n, MaxSocketPath, MaxSocketPath-(n-len(root)))
	}
	return nil
}
