// Package sshx holds the SSH building blocks sluice uses on every hop: host
// keys pinned in known_hosts files, signers from key files, dialing over any
// dialer (a TCP dialer or an existing client, for a jump), and keepalives.
//
// Nothing here accepts a host key it has not seen: there is no "accept new".
package sshx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeys returns a callback that accepts only the host keys pinned in the
// given known_hosts files (OpenSSH format, hashed names and @revoked and
// @cert-authority markers included). A host that is missing from the files
// is refused like a host that shows another key. The callback's errors are
// *HostKeyError.
//
// Giving no file, or files that pin no key at all, is an error.
func HostKeys(files ...string) (ssh.HostKeyCallback, error) {
	if len(files) == 0 {
		return nil, errors.New("host keys: no known_hosts file given")
	}
	pinned := 0
	for _, f := range files {
		n, err := countEntries(f)
		if err != nil {
			return nil, fmt.Errorf("host keys: %w", err)
		}
		pinned += n
	}
	if pinned == 0 {
		return nil, fmt.Errorf("host keys: %s pin no host key", strings.Join(files, ", "))
	}
	check, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("host keys: %w", err)
	}
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := check(host, remote, key); err != nil {
			return &HostKeyError{Host: host, Key: key, Files: files, Err: err}
		}
		return nil
	}, nil
}

// countEntries counts the lines of a known_hosts file that are neither
// blank nor comments.
func countEntries(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n, sc.Err()
}

// HostKeyError reports a host key that is not pinned: the host is unknown,
// its key differs from the pinned one, or its key is revoked. Err is the
// knownhosts error (*knownhosts.KeyError or *knownhosts.RevokedError).
type HostKeyError struct {
	Host  string
	Key   ssh.PublicKey
	Files []string
	Err   error
}

func (e *HostKeyError) Error() string {
	offered := e.Key.Type() + " " + ssh.FingerprintSHA256(e.Key)
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	switch {
	case errors.As(e.Err, &revoked):
		return fmt.Sprintf("host key check: %s offered the revoked key %s (%s:%d)",
			e.Host, offered, revoked.Revoked.Filename, revoked.Revoked.Line)
	case errors.As(e.Err, &keyErr) && len(keyErr.Want) == 0:
		return fmt.Sprintf("host key check: %s is unknown: its key %s is not pinned in %s",
			e.Host, offered, strings.Join(e.Files, ", "))
	case errors.As(e.Err, &keyErr):
		w := keyErr.Want[0]
		return fmt.Sprintf("host key check: %s: host key mismatch: it offered %s, which is not pinned (%s:%d pins %s %s); possible man-in-the-middle",
			e.Host, offered, w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key))
	default:
		return fmt.Sprintf("host key check: %s: %v", e.Host, e.Err)
	}
}

func (e *HostKeyError) Unwrap() error { return e.Err }

// HostKeyAlgorithms returns the host key algorithms of the keys that check
// (a callback from HostKeys) pins for addr ("host:port"), for
// ssh.ClientConfig.HostKeyAlgorithms: the handshake then asks the server
// for the pinned key type instead of the first type both sides support.
//
// It returns nil when check pins no plain key for addr (for example when the
// host is only covered by a @cert-authority line); the default list is then
// the right choice.
func HostKeyAlgorithms(check ssh.HostKeyCallback, addr string) []string {
	if check == nil {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "22")
	}
	err := check(addr, probeAddr(addr), probeKey{})
	var keyErr *knownhosts.KeyError
	if !errors.As(err, &keyErr) {
		return nil
	}
	var algos []string
	for _, k := range keyErr.Want {
		for _, a := range algorithmsFor(k.Key.Type()) {
			if !slices.Contains(algos, a) {
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// algorithmsFor maps a key type to the signature algorithms that use it.
// RSA keys sign with SHA-2; the SHA-1 "ssh-rsa" algorithm is left out.
func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{keyType}
}

// probeKey is a key no known_hosts file holds: checking it makes knownhosts
// list the keys it pins for a host.
type probeKey struct{}

func (probeKey) Type() string    { return "sluice-probe@sluice" }
func (probeKey) Marshal() []byte { return ssh.Marshal(struct{ Name string }{"sluice-probe@sluice"}) }
func (probeKey) Verify([]byte, *ssh.Signature) error {
	return errors.New("sluice-probe key verifies nothing")
}

// probeAddr is the remote address given to the callback with probeKey.
type probeAddr string

func (a probeAddr) Network() string { return "tcp" }
func (a probeAddr) String() string  { return string(a) }
