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
// A host covered by a @cert-authority line is accepted when it shows a
// host certificate that CA signed for its name, valid now, whose key is not
// @revoked; a plain key it shows must still be pinned on a line of its own
// (the CA's own key shown as a plain host key is refused).
//
// Giving no file, or files that pin no key at all, is an error.
func HostKeys(files ...string) (ssh.HostKeyCallback, error) {
	if len(files) == 0 {
		return nil, errors.New("host keys: no known_hosts file given")
	}
	idx := &pinIndex{authorities: map[lineRef]bool{}, caKeys: map[string]bool{}, plainKeys: map[string]bool{}}
	pinned := 0
	for _, f := range files {
		n, err := idx.read(f)
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
		err := check(host, remote, key)
		if err == nil && idx.caOnly(key) {
			err = errAuthorityAsHostKey
		}
		if err != nil {
			return &HostKeyError{Host: host, Key: key, Files: files, Err: err, isAuthority: idx.isAuthority}
		}
		return nil
	}, nil
}

// errAuthorityAsHostKey: a host showed, as its plain host key, the key of a
// certificate authority (which knownhosts would match on the CA's line).
var errAuthorityAsHostKey = errors.New("a certificate authority's key shown as a plain host key")

// lineRef is a line of a known_hosts file, as knownhosts.KnownKey gives it.
type lineRef struct {
	file string
	line int
}

// pinIndex tells the @cert-authority lines of known_hosts files from the
// lines that pin a host key.
type pinIndex struct {
	authorities map[lineRef]bool
	caKeys      map[string]bool // keys of @cert-authority lines
	plainKeys   map[string]bool // keys of lines without a marker
}

// read indexes file and returns how many lines it has that are neither
// blank nor comments. Lines are numbered as knownhosts numbers them.
func (p *pinIndex) read(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n, num := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		num++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		n++
		// Invalid lines are knownhosts.New's to report.
		marker, _, key, _, _, err := ssh.ParseKnownHosts(line)
		switch {
		case err != nil:
		case marker == "cert-authority":
			p.authorities[lineRef{file, num}] = true
			p.caKeys[string(key.Marshal())] = true
		case marker == "":
			p.plainKeys[string(key.Marshal())] = true
		}
	}
	return n, sc.Err()
}

// isAuthority reports whether k comes from a @cert-authority line.
func (p *pinIndex) isAuthority(k knownhosts.KnownKey) bool {
	return p.authorities[lineRef{k.Filename, k.Line}]
}

// caOnly reports whether key is a plain key pinned only as a certificate
// authority.
func (p *pinIndex) caOnly(key ssh.PublicKey) bool {
	if _, ok := key.(*ssh.Certificate); ok {
		return false
	}
	blob := string(key.Marshal())
	return p.caKeys[blob] && !p.plainKeys[blob]
}

// HostKeyError reports a host key that is not pinned: the host is unknown,
// its key differs from the pinned one, or its key is revoked, or its host
// certificate is not one a @cert-authority line accepts. Err is the
// knownhosts error (*knownhosts.KeyError or *knownhosts.RevokedError), the
// certificate check's error, or the refusal of a CA's key shown as a plain
// host key.
type HostKeyError struct {
	Host  string
	Key   ssh.PublicKey
	Files []string
	Err   error

	// isAuthority tells the @cert-authority lines among the knownhosts
	// error's Want; nil if unknown.
	isAuthority func(knownhosts.KnownKey) bool
}

// split parts the keys of a *knownhosts.KeyError into those of
// @cert-authority lines and those pinned as host keys.
func (e *HostKeyError) split(want []knownhosts.KnownKey) (authorities, pinned []knownhosts.KnownKey) {
	for _, k := range want {
		if e.isAuthority != nil && e.isAuthority(k) {
			authorities = append(authorities, k)
		} else {
			pinned = append(pinned, k)
		}
	}
	return authorities, pinned
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
		cas, pinned := e.split(keyErr.Want)
		if len(pinned) == 0 {
			w := cas[0]
			return fmt.Sprintf("host key check: %s offered the plain key %s, not a host certificate of the certificate authority %s %s (%s:%d), and the key is not pinned",
				e.Host, offered, w.Key.Type(), ssh.FingerprintSHA256(w.Key), w.Filename, w.Line)
		}
		w := pinned[0]
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
// When a @cert-authority line covers addr, the host certificate algorithms
// come first (the host certificate's key type is not known in advance),
// then those of the keys pinned for it or, when none is, every plain
// algorithm: a host without a certificate then shows its plain key and is
// refused by the host key check, with an error that says why, instead of
// failing the algorithm negotiation.
//
// It returns nil when check pins nothing for addr; the default list is
// then the right choice.
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
	want := keyErr.Want
	var algos []string
	var hkErr *HostKeyError
	if errors.As(err, &hkErr) {
		var cas []knownhosts.KnownKey
		cas, want = hkErr.split(want)
		if len(cas) > 0 {
			algos = slices.Clone(hostCertAlgorithms)
			if len(want) == 0 {
				algos = append(algos, plainHostKeyAlgorithms...)
			}
		}
	}
	for _, k := range want {
		for _, a := range algorithmsFor(k.Key.Type()) {
			if !slices.Contains(algos, a) {
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// hostCertAlgorithms are the host certificate algorithms asked for a host
// a @cert-authority line covers. RSA certificates sign with SHA-2 only.
var hostCertAlgorithms = []string{
	ssh.CertAlgoED25519v01,
	ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
	ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01,
}

// plainHostKeyAlgorithms are the plain host key algorithms asked for after
// the certificates when only a @cert-authority line covers a host.
var plainHostKeyAlgorithms = []string{
	ssh.KeyAlgoED25519,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
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
