package tunnel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Modes of Reverse.Sshd.
const (
	// SshdNode: the remote forwards are asked of the node's own sshd.
	SshdNode = "node"
	// SshdUserspace: they are asked of an sshd -i the session starts as
	// the job's user, for a node sshd that refuses stream-local forwarding.
	SshdUserspace = "userspace"
)

// DefaultSshdPath is where the user-space sshd is looked for on the node.
const DefaultSshdPath = "/usr/sbin/sshd"

// The files of a user-space sshd in the socket directory, after the
// session's name (sshdFile): the forwards' and the SOCKS proxy's sessions
// each start their own. Its configuration is no file (sshdOptions).
const (
	sshdHostKeyFile    = "host_key"
	sshdAuthorizedFile = "authorized_keys"
)

// sshdFile is the name of file of the user-space sshd of the session.
func (s *reverseState) sshdFile(file string) string {
	if s.socks {
		return "sshd-socks-" + file
	}
	return "sshd-forwards-" + file
}

// userspaceSshd starts an sshd -i as the session's user on the node through
// ex (the node's sshd, or srun from the login node), with a host key and an authorized
// key made for this session alone and written into the socket directory
// (whose inode must still be inode), and returns a client connected to it
// with that host key pinned. Closing the client ends the sshd.
func (s *reverseState) userspaceSshd(ctx context.Context, ex nodeExec, inode string) (*ssh.Client, error) {
	hostPub, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("user-space sshd: host key: %w", err)
	}
	_, userPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("user-space sshd: client key: %w", err)
	}
	hostKey, err := ssh.NewPublicKey(hostPub)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(userPriv)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(hostPriv, "sluice user-space sshd")
	if err != nil {
		return nil, fmt.Errorf("user-space sshd: host key: %w", err)
	}
	dir := s.r.SocketDir
	files := []struct {
		name string
		data []byte
	}{
		{s.sshdFile(sshdHostKeyFile), pem.EncodeToMemory(block)},
		{s.sshdFile(sshdAuthorizedFile), ssh.MarshalAuthorizedKey(signer.PublicKey())},
	}
	for _, f := range files {
		if _, err := s.commandIn(ctx, ex, sshdFileCommand(dir, inode, f.name), bytes.NewReader(f.data)); err != nil {
			return nil, fmt.Errorf("user-space sshd: write %s: %w", f.name, err)
		}
	}

	sess, err := ex.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("user-space sshd: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("user-space sshd: %w", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("user-space sshd: %w", err)
	}
	var stderr bytes.Buffer
	sess.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	options := sshdOptions(dir, s.sshdFile(sshdHostKeyFile), s.sshdFile(sshdAuthorizedFile))
	if err := sess.Start(ex.command(sshdCommand(dir, inode, s.sshdPath(), options))); err != nil {
		sess.Close()
		return nil, fmt.Errorf("user-space sshd: start: %w", err)
	}
	conn := &stdioConn{r: stdout, w: stdin, close: sess.Close}
	cfg := &ssh.ClientConfig{
		User:            s.r.Hop.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         s.r.Hop.timeout(),
	}
	type result struct {
		c   ssh.Conn
		chs <-chan ssh.NewChannel
		rs  <-chan *ssh.Request
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, chs, rs, err := ssh.NewClientConn(conn, "sluice-userspace-sshd", cfg)
		done <- result{c, chs, rs, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			conn.Close()
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return nil, fmt.Errorf("user-space sshd: %w: %s", res.err, msg)
			}
			return nil, fmt.Errorf("user-space sshd: %w", res.err)
		}
		return ssh.NewClient(res.c, res.chs, res.rs), nil
	case <-ctx.Done():
		conn.Close()
		return nil, context.Cause(ctx)
	case <-time.After(s.r.Hop.timeout()):
		conn.Close()
		return nil, fmt.Errorf("user-space sshd: no handshake within %v: %s", s.r.Hop.timeout(), strings.TrimSpace(stderr.String()))
	}
}

func (s *reverseState) sshdPath() string {
	if s.r.SshdPath != "" {
		return s.r.SshdPath
	}
	return DefaultSshdPath
}

// sshdOptions is the whole configuration of a user-space sshd with its files
// in dir, as -o options after -f /dev/null (a file in dir could be read
// after it was checked): public-key login with the session's key alone,
// forwards bound where they are asked (GatewayPorts no), no ForceCommand, no
// privilege separation to ask for (it runs as the user), and no file outside
// dir.
func sshdOptions(dir, hostKey, authorized string) []string {
	var args []string
	for _, o := range []string{
		"HostKey=" + path.Join(dir, hostKey),
		"AuthorizedKeysFile=" + path.Join(dir, authorized),
		"PidFile=none",
		"UsePAM=no",
		// The socket directory root is /tmp-like (every user's, sticky),
		// which StrictModes refuses for the authorized keys' parents; the
		// tunnel checks the root as the job does (sluice_root_check).
		"StrictModes=no",
		"PubkeyAuthentication=yes",
		"AuthenticationMethods=publickey",
		"PasswordAuthentication=no",
		"KbdInteractiveAuthentication=no",
		"AllowStreamLocalForwarding=yes",
		"AllowTcpForwarding=yes",
		"GatewayPorts=no",
		"StreamLocalBindUnlink=no",
		"PermitTTY=no",
		"X11Forwarding=no",
		"PermitUserRC=no",
		"LogLevel=ERROR",
	} {
		args = append(args, "-o", o)
	}
	return args
}

// stdioConn is an SSH session's standard input and output as a net.Conn,
// for an SSH connection to the sshd -i running in it.
type stdioConn struct {
	r     io.Reader
	w     io.Writer
	close func() error // closes the session: called once
	once  sync.Once
	err   error
}

func (c *stdioConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *stdioConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close closes the session, which ends the sshd. It does not half-close
// the standard input first: the SSH library's channel does not guard its
// end-of-file flag against a write in flight.
func (c *stdioConn) Close() error {
	c.once.Do(func() { c.err = c.close() })
	return c.err
}
func (c *stdioConn) LocalAddr() net.Addr              { return stdioAddr{} }
func (c *stdioConn) RemoteAddr() net.Addr             { return stdioAddr{} }
func (c *stdioConn) SetDeadline(time.Time) error      { return nil }
func (c *stdioConn) SetReadDeadline(time.Time) error  { return nil }
func (c *stdioConn) SetWriteDeadline(time.Time) error { return nil }

type stdioAddr struct{}

func (stdioAddr) Network() string { return "stdio" }
func (stdioAddr) String() string  { return "user-space sshd" }
