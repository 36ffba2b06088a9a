package scripttest

import (
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"path"
)

// TestSalt is a salt as salt.New draws them, for rendered scripts that must
// not change between runs.
const TestSalt = "00112233445566778899aabbccddeeff"

// Predictable are the names a job's reverse tunnel took before salts, which
// any user of the site could work out from the pod UID that squeue shows:
// <SocketDirRoot>/<uid>, and the address hashed from the UID alone (the
// first 4 bytes of SHA-256(uid), as annotations.DeriveBind did).
func Predictable(root, uid string) (string, string) {
	return path.Join(root, uid), UnsaltedAddr(uid).String()
}

// UnsaltedAddr is the relay address the pod uid alone gave before salts.
func UnsaltedAddr(uid string) netip.Addr {
	sum := sha256.Sum256([]byte(uid))
	low := 0x010000 + binary.BigEndian.Uint32(sum[:4])%(0xfffffe-0x010000+1)
	return netip.AddrFrom4([4]byte{127, byte(low >> 16), byte(low >> 8), byte(low)})
}
