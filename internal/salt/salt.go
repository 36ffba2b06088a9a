// Package salt holds the per-pod secret that keeps the names a pod's job
// takes on a compute node from being guessed by the site's other users.
//
// A job is named after its pod's UID, which squeue shows to every user of
// the site. Names derived from the UID alone (the socket directory under
// Site.SocketDirRoot, the relay's loopback address) can be taken first by
// any of them: a directory made before the job starts, an address bound
// before its relay, and the job fails. Derived from the UID and a salt that
// only sluice-vk and the job's directory hold, they cannot be guessed.
//
// A salt is drawn once per pod by sluice-vk (New), kept in the pod's job
// directory on the site (0600, in a 0700 directory) and read back from
// there when sluice-vk adopts the job after a restart, so that a pod keeps
// its names for its whole life. The names it gives are known to other
// users of the node once the job runs (unix socket paths and listening
// addresses are listed in /proc/net): it guards the job's start, not a
// requeue under a user who watched the first run.
package salt

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Size is the number of random bytes in a salt: 128 bits, beyond any
// guessing.
const Size = 16

// Len is the length of a salt's text: Size bytes in lower-case hex.
const Len = 2 * Size

// New draws a salt from crypto/rand, as Len lower-case hex digits.
func New() string {
	// crypto/rand.Read never fails: it crashes the program instead.
	b := make([]byte, Size)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Check reports a text that is not a salt New draws: Len lower-case hex
// digits.
func Check(s string) error {
	if len(s) != Len {
		return fmt.Errorf("salt has %d characters; want %d hex digits", len(s), Len)
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return errors.New("salt holds a character other than 0-9 and a-f")
		}
	}
	return nil
}

// Labels tell apart the names derived from one salt, so that one of them,
// seen on the node, says nothing of another.
const (
	LabelSocketDir = "sluice socket directory"
	LabelRelayAddr = "sluice relay address"
)

// Derive is HMAC-SHA256 keyed with the salt's text, of label, a NUL byte
// and uid. The same salt, label and uid always give the same sum.
func Derive(salt, label, uid string) [sha256.Size]byte {
	m := hmac.New(sha256.New, []byte(salt))
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(uid))
	var sum [sha256.Size]byte
	m.Sum(sum[:0])
	return sum
}
