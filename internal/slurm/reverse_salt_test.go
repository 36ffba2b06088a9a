package slurm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/salt"
	"github.com/sluice-hpc/sluice/internal/sitepath"
)

// testSalt is a salt as salt.New draws them, for rendered scripts that must
// not change between runs.
const testSalt = "00112233445566778899aabbccddeeff"

// relayAddrOf is the address job's relay holds, as its script has it.
func relayAddrOf(t *testing.T, job *Job) netip.Addr {
	t.Helper()
	a, err := job.Reverse.relayAddr(job.UID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// predictable are the names a job's reverse tunnel took before salts, which
// any user of the site could work out from the pod UID that squeue shows:
// <SocketDirRoot>/<uid>, and the address hashed from the UID alone (the
// first 4 bytes of SHA-256(uid), as annotations.DeriveBind did).
func predictable(t *testing.T, root, uid string) (string, string) {
	t.Helper()
	return path.Join(root, uid), unsaltedAddr(uid).String()
}

// unsaltedAddr is the relay address the pod uid alone gave before salts.
func unsaltedAddr(uid string) netip.Addr {
	sum := sha256.Sum256([]byte(uid))
	low := 0x010000 + binary.BigEndian.Uint32(sum[:4])%(0xfffffe-0x010000+1)
	return netip.AddrFrom4([4]byte{127, byte(low >> 16), byte(low >> 8), byte(low)})
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
	guessDir, guessAddr := predictable(t, root, uid)
	dirA, addrA := render(t, testSalt, netip.Addr{})
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
	want, err := annotations.DeriveBind(uid, testSalt)
	if err != nil || addrA != want.String() {
		t.Errorf("relay address %s; want DeriveBind's %v (%v)", addrA, want, err)
	}
	if want := sitepath.SocketDir(root, uid, testSalt); dirA != want {
		t.Errorf("socket directory %s; want sitepath.SocketDir's %s", dirA, want)
	}
	// interlink.eu/reverse-bind overrides the salted address.
	if _, got := render(t, testSalt, netip.MustParseAddr("127.1.0.5")); got != "127.1.0.5" {
		t.Errorf("relay address with reverse-bind 127.1.0.5: %s", got)
	}
}

// TestSubmitSalt: Submit draws a salt for a new job and keeps it, 0600, in
// the job directory before sbatch runs; a job it adopts gets the salt it was
// submitted with back, so that a restarted sluice-vk tells the shadow the
// same socket directory; one submitted before salts gets "".
func TestSubmitSalt(t *testing.T) {
	ctx := context.Background()
	c, f, _ := newTestClient(t)
	f.handle = (&slurmFake{sbatch: "4242\n"}).handle
	reverseJob := func() *Job {
		job := sampleJob()
		job.Reverse = &ReverseJob{SocksPort: 1080, SocketDirRoot: "/tmp/s"}
		return job
	}
	job := reverseJob()
	if _, err := c.Submit(ctx, job); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	drawn := job.Reverse.Salt
	if err := salt.Check(drawn); err != nil {
		t.Fatalf("Submit drew salt %q: %v", drawn, err)
	}
	saltPath := path.Join(JobDir(c.DataRoot, job.Namespace, job.UID), saltFile)
	if ff, ok := f.file(saltPath); !ok || string(ff.data) != drawn+"\n" || ff.mode != 0o600 {
		t.Fatalf("%s: %+v; want %q, 0600", saltFile, ff, drawn+"\n")
	}
	f.mu.Lock()
	script := f.stdin["sbatch"]
	f.mu.Unlock()
	if name := path.Base(job.Reverse.SocketDir(job.UID)); !bytes.Contains(script, []byte("sluice_rev_dir=$sluice_rev_root/"+name+"\n")) {
		t.Errorf("the submitted script does not name the salted socket directory %s", name)
	}

	adopted := reverseJob()
	if _, err := c.Submit(ctx, adopted); err != nil || adopted.Reverse.Salt != drawn {
		t.Errorf("adopted job's salt %q, %v; want %q, as submitted", adopted.Reverse.Salt, err, drawn)
	}

	if err := f.RemoveAll(ctx, saltPath); err != nil {
		t.Fatal(err)
	}
	old := reverseJob()
	if _, err := c.Submit(ctx, old); err != nil || old.Reverse.Salt != "" {
		t.Errorf("job submitted before salts: salt %q, %v; want \"\", nil", old.Reverse.Salt, err)
	}
	if got := old.Reverse.SocketDir(old.UID); got != path.Join("/tmp/s", old.UID) {
		t.Errorf("its socket directory %s; want the uid's, as its script has it", got)
	}

	f.put(saltPath, "not a salt\n")
	if _, err := c.Submit(ctx, reverseJob()); err == nil || !strings.Contains(err.Error(), saltFile) {
		t.Errorf("adopted job with a malformed salt: got %v; want an error naming %s", err, saltFile)
	}
}
