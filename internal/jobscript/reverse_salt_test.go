package jobscript

import (
	"bytes"
	"net/netip"
	"path"
	"regexp"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/sitepath"
)

// relayAddrOf is the address job's relay holds, as its script has it.
func relayAddrOf(t *testing.T, job *Job) netip.Addr {
	t.Helper()
	a, err := job.Reverse.RelayAddr(job.UID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	scriptSocketDir = regexp.MustCompile(`(?m)^sluice_rev_dir=\$sluice_rev_root/(\S+)$`)
	scriptRelayAddr = regexp.MustCompile(`(?m)^sluice_rev_start_relay (\S+) `)
)

// TestReverseNamesAreSalted: the socket directory and the relay's address in
// a job's script come from its salt, not from its pod UID alone: another
// user of the node, who sees the UID in squeue, cannot make the directory or
// bind the address first. The pod's own reverse-bind still wins.
func TestReverseNamesAreSalted(t *testing.T) {
	const root = "/tmp/sluice"
	render := func(t *testing.T, s string, addr netip.Addr) (dir, relayAddr string) {
		t.Helper()
		job := testJob()
		job.Reverse = &ReverseJob{Addr: addr, Ports: []uint16{6379}, Names: []string{"redis"},
			SocketDirRoot: root, RelayPath: "/bin/relay", Salt: s}
		script, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
		if err != nil {
			t.Fatalf("Script: %v", err)
		}
		d, a := scriptSocketDir.FindSubmatch(script), scriptRelayAddr.FindSubmatch(script)
		if d == nil || a == nil {
			t.Fatalf("no socket directory or relay start in the script:\n%s", script)
		}
		name := string(bytes.Trim(d[1], "'"))
		if want := job.Reverse.SocketDir(job.UID); path.Join(root, name) != want {
			t.Errorf("script's socket directory %s/%s; SocketDir says %s", root, name, want)
		}
		return path.Join(root, name), string(bytes.Trim(a[1], "'"))
	}
	uid := testJob().UID
	guessDir, guessAddr := scripttest.Predictable(root, uid)
	dirA, addrA := render(t, scripttest.TestSalt, netip.Addr{})
	dirB, addrB := render(t, "ffeeddccbbaa99887766554433221100", netip.Addr{})
	for _, got := range []string{dirA, dirB} {
		if got == guessDir {
			t.Errorf("socket directory %s is the one the pod uid names", got)
		}
	}
	for _, got := range []string{addrA, addrB} {
		if got == guessAddr {
			t.Errorf("relay address %s is the one the pod uid gives", got)
		}
	}
	if dirA == dirB || addrA == addrB {
		t.Errorf("two salts gave %s %s and %s %s; want each its own", dirA, addrA, dirB, addrB)
	}
	want, err := annotations.DeriveBind(uid, scripttest.TestSalt)
	if err != nil || addrA != want.String() {
		t.Errorf("relay address %s; want DeriveBind's %v (%v)", addrA, want, err)
	}
	if want := sitepath.SocketDir(root, uid, scripttest.TestSalt); dirA != want {
		t.Errorf("socket directory %s; want sitepath.SocketDir's %s", dirA, want)
	}
	// interlink.eu/reverse-bind overrides the salted address.
	if _, got := render(t, scripttest.TestSalt, netip.MustParseAddr("127.1.0.5")); got != "127.1.0.5" {
		t.Errorf("relay address with reverse-bind 127.1.0.5: %s", got)
	}
}
