package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// socketForward is a remote forward of one of a pod's sockets, asked by a
// shadow and held on the shared node connection. The node connection's
// client demultiplexes the forwarded-streamlocal channels by path; each is
// carried to the shadow that asked, under the path it asked by.
type socketForward struct {
	sc    *shadowConn
	asked string // the path as the shadow asked for it
	path  string // the socket on the node
	ln    net.Listener
	once  sync.Once
}

// stepTimeout bounds each command the gateway runs on a node for a shadow.
const stepTimeout = 20 * time.Second

// listen asks the node's sshd for one of the pod's sockets. The first one
// asked on a connection prepares the socket directory and starts its
// holder, which closes the connection when it ends.
func (sc *shadowConn) listen(payload []byte) error {
	asked, name, err := parseSocket(sc.grant, payload)
	if err != nil {
		return err
	}
	node, err := sc.node()
	if err != nil {
		return fmt.Errorf("streamlocal-forward %s: %w", name, err)
	}
	dir := sc.grant.SocketDir
	p := path.Join(dir, name)
	sc.smu.Lock()
	defer sc.smu.Unlock()
	if _, ok := sc.sockets[p]; ok {
		return fmt.Errorf("streamlocal-forward %s: forwarded already", name)
	}
	ctx, cancel := context.WithTimeout(sc.ctx, stepTimeout)
	defer cancel()
	if !sc.holding {
		inode, err := tunnel.PrepareSocketDir(ctx, node.client, dir)
		if err != nil {
			return fmt.Errorf("streamlocal-forward %s: %w", name, err)
		}
		sc.inode, sc.holding = inode, true
		go sc.hold(node, inode)
	}
	// A connection of the same pod that has not noticed it is gone may
	// still hold the socket: this one takes it over.
	sc.srv.takeOver(p)
	if err := tunnel.ClearSockets(ctx, node.client, dir, sc.inode, name); err != nil {
		return fmt.Errorf("streamlocal-forward %s: %w", name, err)
	}
	ln, err := node.client.ListenUnix(p)
	if err != nil {
		return fmt.Errorf("streamlocal-forward %s on node %s: %w", p, sc.grant.Node, err)
	}
	f := &socketForward{sc: sc, asked: asked, path: p, ln: ln}
	if sc.sockets == nil {
		sc.sockets = make(map[string]*socketForward)
	}
	sc.sockets[p] = f
	sc.srv.setSocket(f)
	go f.accept()
	sc.log.Info("remote forward held", "socket", p)
	return nil
}

// hold runs the socket directory's holder; when it ends (the directory
// was removed or replaced: a requeue), the shadow's connection is closed
// with the reason, and the shadow reconnects.
func (sc *shadowConn) hold(node *siteConn, inode string) {
	held := make(chan struct{})
	err := tunnel.HoldSocketDir(sc.ctx, node.client, sc.grant.SocketDir, inode, held)
	if sc.ctx.Err() != nil {
		return
	}
	sc.close(fmt.Errorf("socket directory %s: %w", sc.grant.SocketDir, err))
}

// unlisten cancels a remote forward the shadow asked for.
func (sc *shadowConn) unlisten(payload []byte) error {
	_, name, err := parseSocket(sc.grant, payload)
	if err != nil {
		return fmt.Errorf("cancel-%w", err)
	}
	p := path.Join(sc.grant.SocketDir, name)
	sc.smu.Lock()
	f, ok := sc.sockets[p]
	delete(sc.sockets, p)
	sc.smu.Unlock()
	if !ok {
		return errors.New("cancel-streamlocal-forward: no such forward")
	}
	f.close()
	return nil
}

// cleanup closes the shadow's forwards once its connection is gone.
func (sc *shadowConn) cleanup() {
	sc.smu.Lock()
	fs := sc.sockets
	sc.sockets = nil
	sc.smu.Unlock()
	for _, f := range fs {
		f.close()
	}
}

// accept carries each connection made to the socket on the node to the
// shadow, until the listener is closed.
func (f *socketForward) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		select {
		case f.sc.slots <- struct{}{}:
		default:
			f.sc.log.Warn("connection refused", "socket", f.path, "error", fmt.Errorf("%d channels open already", cap(f.sc.slots)))
			c.Close()
			continue
		}
		go func() {
			defer func() { <-f.sc.slots }()
			ch, reqs, err := f.sc.conn.OpenChannel("forwarded-streamlocal@openssh.com", ssh.Marshal(forwardedStreamLocal{Path: f.asked}))
			if err != nil {
				f.sc.log.Debug("shadow refused a forwarded connection", "socket", f.path, "error", err)
				c.Close()
				return
			}
			go ssh.DiscardRequests(reqs)
			splice(f.sc.ctx, ch, c)
		}()
	}
}

// close cancels the forward on the node, once only: the node client
// knows its forwards by path, and closing again would cancel a newer
// forward of the same path.
func (f *socketForward) close() {
	f.once.Do(func() {
		f.ln.Close()
		f.sc.srv.dropSocket(f)
	})
}

// takeOver closes the forward another connection holds at p. The old
// connection keeps it in its set (closing twice is harmless): taking its
// lock here could deadlock with it taking over from this one.
func (s *Server) takeOver(p string) {
	s.mu.Lock()
	old := s.sockets[p]
	s.mu.Unlock()
	if old == nil {
		return
	}
	old.sc.log.Info("remote forward taken over by a newer connection of the pod", "socket", p)
	old.close()
}

func (s *Server) setSocket(f *socketForward) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sockets == nil {
		s.sockets = make(map[string]*socketForward)
	}
	s.sockets[f.path] = f
}

func (s *Server) dropSocket(f *socketForward) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sockets[f.path] == f {
		delete(s.sockets, f.path)
	}
}
