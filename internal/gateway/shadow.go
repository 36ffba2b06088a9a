package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// shadowConn is one authenticated shadow connection.
type shadowConn struct {
	srv   *Server
	conn  *ssh.ServerConn
	grant *Grant
	log   *slog.Logger
	slots chan struct{} // one per open forward channel

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	lease *nodeLease // the job's node's connection, once needed

	// smu serializes the remote forwards' set-up, apart from mu: a
	// forward channel does not wait for a command on the node.
	smu     sync.Mutex
	sockets map[string]*socketForward // by path on the node
	holding bool                      // the socket directory's holder runs
	inode   string
}

// serve serves the shadow's channels and requests until its connection
// ends or sc.ctx does.
func (sc *shadowConn) serve(chans <-chan ssh.NewChannel, reqs <-chan *ssh.Request) {
	stop := context.AfterFunc(sc.ctx, func() { sc.conn.Close() })
	defer stop()
	sc.log.Info("shadow connected")
	var wg sync.WaitGroup
	wg.Go(func() { sc.requests(reqs) })
	// A shadow gone without a word (its node lost, a half-open
	// connection) must not keep its forwards on the node.
	wg.Go(func() {
		every := orDefault(sc.srv.KeepAliveInterval, 15*time.Second)
		timeout := orDefault(sc.srv.KeepAliveTimeout, 15*time.Second)
		if err := sshx.KeepAlive(sc.ctx, sc.conn, every, timeout); err != nil {
			sc.cancel(fmt.Errorf("shadow lost: %w", err))
		}
	})
	for nch := range chans {
		if nch.ChannelType() != "direct-tcpip" {
			sc.refuse(nch, ssh.Prohibited, fmt.Errorf("channel %.64q: a shadow may open direct-tcpip channels only", nch.ChannelType()))
			continue
		}
		select {
		case sc.slots <- struct{}{}:
		default:
			sc.refuse(nch, ssh.ResourceShortage, fmt.Errorf("direct-tcpip: %d channels open already", cap(sc.slots)))
			continue
		}
		wg.Go(func() {
			defer func() { <-sc.slots }()
			sc.forward(nch)
		})
	}
	sc.cancel(errors.New("shadow disconnected"))
	wg.Wait()
	sc.cleanup()
	sc.log.Info("shadow disconnected", "reason", context.Cause(sc.ctx))
}

// close ends the connection, logging why.
func (sc *shadowConn) close(reason error) {
	sc.log.Info("closing the shadow's connection", "reason", reason)
	sc.cancel(reason)
}

// refuse rejects a channel, logging why with the pod.
func (sc *shadowConn) refuse(nch ssh.NewChannel, why ssh.RejectionReason, err error) {
	sc.log.Warn("refused", "error", err)
	nch.Reject(why, err.Error())
}

// requests answers the shadow's global requests.
func (sc *shadowConn) requests(reqs <-chan *ssh.Request) {
	for req := range reqs {
		switch req.Type {
		case "keepalive@openssh.com":
			req.Reply(false, nil) // an answer is all a keepalive asks
		case "streamlocal-forward@openssh.com":
			err := sc.listen(req.Payload)
			if err != nil {
				sc.log.Warn("refused", "error", err)
			}
			req.Reply(err == nil, nil)
		case "cancel-streamlocal-forward@openssh.com":
			err := sc.unlisten(req.Payload)
			req.Reply(err == nil, nil)
		default:
			sc.log.Warn("refused", "error", fmt.Errorf("request %.64q: a shadow may ask for streamlocal forwards only", req.Type))
			req.Reply(false, nil)
		}
	}
}

// node returns the connection to the job's node, leased once for the
// shadow connection.
func (sc *shadowConn) node() (*siteConn, error) {
	if sc.grant.Node == "" {
		return nil, errNoNode
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.lease != nil && sc.lease.conn.alive() {
		return sc.lease.conn, nil
	}
	if sc.lease != nil {
		// The node connection was lost: what it carried for this shadow
		// is gone, and the shadow must set it up again.
		return nil, errors.New("the connection to the node was lost")
	}
	lease, err := sc.srv.Site.Node(sc.ctx, sc.grant.Node)
	if err != nil {
		return nil, err
	}
	sc.lease = lease
	context.AfterFunc(sc.ctx, lease.Release)
	go func() {
		select {
		case <-lease.conn.dead:
			sc.close(fmt.Errorf("the connection to node %s was lost", sc.grant.Node))
		case <-sc.ctx.Done():
		}
	}()
	return lease.conn, nil
}

// forward carries a direct-tcpip channel to the pod's port on its node.
func (sc *shadowConn) forward(nch ssh.NewChannel) {
	port, err := parseForward(sc.grant, nch.ExtraData())
	if err != nil {
		sc.refuse(nch, ssh.Prohibited, err)
		return
	}
	node, err := sc.node()
	if err != nil {
		sc.refuse(nch, ssh.ConnectionFailed, fmt.Errorf("direct-tcpip to port %d: %w", port, err))
		return
	}
	up, err := dialForward(sc.ctx, node.client, sc.grant, port)
	if err != nil {
		// Nothing listening on the job's port is usual while it starts;
		// another user holding it, or a bad port file, is for the pod's
		// author: Prohibited tells the shadow to report it (tunnel.Status,
		// then an Event), at a pace a log line per connection would not keep.
		why := ssh.ConnectionFailed
		var rf *relay.RefusedError
		if errors.As(err, &rf) && rf.Report {
			why = ssh.Prohibited
		}
		sc.log.Debug("forward failed", "port", port, "error", err)
		nch.Reject(why, err.Error())
		return
	}
	ch, reqs, err := nch.Accept()
	if err != nil {
		up.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	splice(sc.ctx, ch, up)
}

// splice copies between a shadow's channel and a connection on the site
// until both directions end or ctx does.
func splice(ctx context.Context, ch ssh.Channel, up net.Conn) {
	stop := context.AfterFunc(ctx, func() {
		ch.Close()
		up.Close()
	})
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(up, ch)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	})
	io.Copy(ch, up)
	ch.CloseWrite()
	wg.Wait()
	ch.Close()
	up.Close()
}
