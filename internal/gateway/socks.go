package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/crypto/ssh"
)

// The SOCKS proxy of a pod (Reverse.SocksPort) is a remote TCP forward of
// its port on the node's loopback, asked by the shadow's SOCKS session as
// of the node's sshd (tcpip-forward); the shadow serves SOCKS5 on each
// connection carried back. Another user of the node who holds the port
// first keeps the proxy down, as without the gateway.

// tcpKey names the SOCKS forward of port on node among the forwards the
// server knows by where they are on the site.
func tcpKey(node string, port uint32) string {
	return "tcp:" + node + ":" + net.JoinHostPort(forwardHost, strconv.FormatUint(uint64(port), 10))
}

// listenSocks asks the node's sshd for the pod's SOCKS port. Like a
// socket's forward, it prepares and holds the socket directory, so that
// a requeue ends it.
func (sc *shadowConn) listenSocks(payload []byte) error {
	port, err := parseSocks(sc.grant, payload)
	if err != nil {
		return err
	}
	node, err := sc.node()
	if err != nil {
		return fmt.Errorf("tcpip-forward %d: %w", port, err)
	}
	key := tcpKey(sc.grant.Node, port)
	sc.smu.Lock()
	defer sc.smu.Unlock()
	if _, ok := sc.sockets[key]; ok {
		return fmt.Errorf("tcpip-forward %d: forwarded already", port)
	}
	ctx, cancel := context.WithTimeout(sc.ctx, stepTimeout)
	defer cancel()
	if err := sc.holdDir(ctx, node); err != nil {
		return fmt.Errorf("tcpip-forward %d: %w", port, err)
	}
	sc.srv.takeOver(key, sc.grant.Pod.UID)
	addr := net.JoinHostPort(forwardHost, strconv.FormatUint(uint64(port), 10))
	ln, err := node.client.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("tcpip-forward %s on node %s (taken by another user?): %w", addr, sc.grant.Node, err)
	}
	sc.held(&socketForward{sc: sc, path: key, ln: ln, open: func(c net.Conn) (ssh.Channel, <-chan *ssh.Request, error) {
		origin, oport := forwardHost, uint32(0)
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			origin, oport = a.IP.String(), uint32(a.Port)
		}
		return sc.conn.OpenChannel("forwarded-tcpip", ssh.Marshal(forwardedTCPIP{Addr: forwardHost, Port: port, OriginAddr: origin, OriginPort: oport}))
	}})
	return nil
}

// unlistenSocks cancels the SOCKS forward the shadow asked for.
func (sc *shadowConn) unlistenSocks(payload []byte) error {
	port, err := parseSocks(sc.grant, payload)
	if err != nil {
		return fmt.Errorf("cancel-%w", err)
	}
	key := tcpKey(sc.grant.Node, port)
	sc.smu.Lock()
	f, ok := sc.sockets[key]
	delete(sc.sockets, key)
	sc.smu.Unlock()
	if !ok {
		return errors.New("cancel-tcpip-forward: no such forward")
	}
	f.close()
	return nil
}
