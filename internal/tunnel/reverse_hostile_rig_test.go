//go:build rig

package tunnel

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestReverseHostileRootRig: bob made the socket directory root first, on
// the node, sticky and open to all; then, a root of the tunnel's user in a
// directory of bob's. The tunnel, which makes the socket directory when it
// comes before the job, must refuse both, naming the path and its owner,
// and make nothing there, with the node's sshd or a user-space one: bob
// could rename the directory away.
func TestReverseHostileRootRig(t *testing.T) {
	r := testrig.Load(t)
	bobName := r.Get(t, "RIG_OTHER_USER")
	bob, err := user.Lookup(bobName)
	if err != nil {
		t.Fatal(err)
	}
	bobNode := nodeClient(t, r, bobName, r.Get(t, "RIG_OTHER_KEY"))
	// bobDir makes a directory of bob's with mode in the node's /tmp.
	bobDir := func(t *testing.T, mode string) string {
		b := make([]byte, 6)
		rand.Read(b)
		dir := "/tmp/sluice-bob-" + hex.EncodeToString(b)
		t.Cleanup(func() { os.RemoveAll(dir) })
		if out, err := onNode(bobNode, "", "sh", "-c", "mkdir -m "+mode+" "+dir+" && chmod "+mode+" "+dir); err != nil {
			t.Fatalf("bob makes %s: %v: %s", dir, err, out)
		}
		return dir
	}
	cases := []struct {
		name string
		sshd string
		root func(t *testing.T) (root, unsafe string)
	}{
		{"root", SshdNode, func(t *testing.T) (string, string) {
			root := bobDir(t, "1777")
			return root, root
		}},
		{"parent", SshdNode, func(t *testing.T) (string, string) {
			parent := bobDir(t, "755")
			root := filepath.Join(parent, "sock")
			if err := os.Mkdir(root, os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(root, os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			return root, parent
		}},
		{"root, user-space sshd", SshdUserspace, func(t *testing.T) (string, string) {
			root := bobDir(t, "1777")
			return root, root
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, unsafe := tc.root(t)
			dir := filepath.Join(root, "test-"+hex.EncodeToString([]byte(t.Name()))[:16])
			states := &stateRecorder{}
			rec := newLogRecorder(t)
			rv := &Reverse{
				Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}),
				NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
				SocketDir:    dir,
				Sshd:         tc.sshd,
				Endpoints:    []Endpoint{{ListenPort: 7000, Host: "127.0.0.1", Port: startTCPEcho(t)}},
				Log:          slog.New(rec),
				BackoffMin:   50 * time.Millisecond,
				BackoffMax:   300 * time.Millisecond,
				PollInterval: 20 * time.Millisecond,
				OnState:      states.record,
			}
			startReverse(t, rv)
			want := "socket directory root " + root + " is not safe: the directory " + unsafe + " is owned by uid " + bob.Uid + " (" + bobName + "), not by root or uid " + r.Get(t, "RIG_USER_UID")
			waitFor(t, 20*time.Second, "the root refused", func() bool {
				return countWith(rec, "reverse tunnel connect failed", "error", want) >= 1
			})
			if states.ups() != 0 {
				t.Errorf("the tunnel came up in a root of bob's")
			}
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket directory made in a root of bob's: %v", err)
			}
			if t.Failed() {
				t.Logf("last error: %s", lastAttr(rec, "reverse tunnel connect failed", "error"))
			}
		})
	}
}
