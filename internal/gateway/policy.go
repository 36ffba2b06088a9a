package gateway

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
)

// What a shadow sends is input: each request's payload is parsed here and
// judged against its grant, and nothing else of it reaches the site.

// forwardHost is the only address a shadow's forward may name: the job's
// loopback on its node, as a per-pod SSH connection asks the node's sshd.
const forwardHost = "127.0.0.1"

// directTCPIP is the payload of a direct-tcpip channel (RFC 4254 7.2).
type directTCPIP struct {
	Host     string
	Port     uint32
	OrigHost string
	OrigPort uint32
}

// parseForward reads a direct-tcpip payload and returns the port it asks
// for, if g allows it.
func parseForward(g *Grant, payload []byte) (int32, error) {
	var d directTCPIP
	if err := ssh.Unmarshal(payload, &d); err != nil {
		return 0, fmt.Errorf("direct-tcpip: malformed request: %w", err)
	}
	if d.Host != forwardHost {
		return 0, fmt.Errorf("direct-tcpip: host %.64q: only %s, the job's node, may be asked for", d.Host, forwardHost)
	}
	if d.Port == 0 || d.Port > 65535 {
		return 0, fmt.Errorf("direct-tcpip: port %d out of range", d.Port)
	}
	port := int32(d.Port)
	if !slices.Contains(g.ForwardPorts, port) {
		return 0, fmt.Errorf("direct-tcpip: port %d is not a container port of pod %s/%s", port, g.Pod.Namespace, g.Pod.Name)
	}
	return port, nil
}

// streamLocal is the payload of a streamlocal-forward@openssh.com or
// cancel-streamlocal-forward@openssh.com request (OpenSSH PROTOCOL 2.4).
type streamLocal struct {
	Path string
}

// forwardedStreamLocal is the payload of a
// forwarded-streamlocal@openssh.com channel.
type forwardedStreamLocal struct {
	Path     string
	Reserved string
}

// maxSocketPath bounds the path a shadow may send: a unix socket's path is
// at most 108 bytes on Linux anyway.
const maxSocketPath = 108

// parseSocket reads a streamlocal request's payload and returns the path as
// the shadow asked for it and the socket's name in g's socket directory. A
// shadow may name one of g's sockets by its name alone or by its path in
// the pod's socket directory.
func parseSocket(g *Grant, payload []byte) (asked, name string, err error) {
	var s streamLocal
	if err := ssh.Unmarshal(payload, &s); err != nil {
		return "", "", fmt.Errorf("streamlocal-forward: malformed request: %w", err)
	}
	name, err = socketName(g, s.Path)
	if err != nil {
		return "", "", fmt.Errorf("streamlocal-forward: %w", err)
	}
	return s.Path, name, nil
}

func socketName(g *Grant, p string) (string, error) {
	if p == "" || len(p) > maxSocketPath {
		return "", fmt.Errorf("socket path of %d bytes", len(p))
	}
	name := p
	if strings.Contains(p, "/") {
		dir, base := path.Split(p)
		if g.SocketDir == "" || path.Clean(dir) != g.SocketDir || dir != g.SocketDir+"/" {
			return "", fmt.Errorf("socket %.120q is not in pod %s/%s's socket directory", p, g.Pod.Namespace, g.Pod.Name)
		}
		name = base
	}
	if !slices.Contains(g.SocketNames, name) {
		return "", fmt.Errorf("socket %.120q is not one of pod %s/%s's", name, g.Pod.Namespace, g.Pod.Name)
	}
	return name, nil
}

// errNoNode refuses what needs the job's node while it has none.
var errNoNode = errors.New("the pod's job has no node yet")
