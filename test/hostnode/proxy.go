package hostnode

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// proxy stands in for kube-proxy: for each TCP port of each Service with a
// cluster IP in the rig's range it listens on the Service's proxy address
// (ServiceAddr) and relays each connection to a backend, chosen when the
// connection comes: the static backend given for the Service port, else a
// ready pod of a host node that the Service selects. With no backend the
// connection is closed at once.
type proxy struct {
	// Static maps a Service port to a fixed backend (selectorless
	// Services: the API server, Redis).
	Static map[ServicePortKey]string
	// Pods lists the ready backends (ip:port) of a Service port among the
	// pods the selector picks. If nil, only static backends exist.
	Pods func(namespace string, selector labels.Selector, sp corev1.ServicePort) []string
	// Namespaces, if set, limits the proxy to the Services of these
	// namespaces.
	Namespaces map[string]bool
	// DialTimeout bounds a backend connect. If zero, 5s.
	DialTimeout time.Duration
	// Log. If nil, slog.Default().
	Log *slog.Logger

	mu        sync.Mutex
	ctx       context.Context
	stopped   bool
	listeners map[netip.AddrPort]*proxyListener
	failed    map[netip.AddrPort]string // the last listen error, logged once
	wg        sync.WaitGroup
}

// ServicePortKey names one port of a Service.
type ServicePortKey struct {
	Namespace, Name string
	Port            int32
}

// proxyListener serves one Service port.
type proxyListener struct {
	ln net.Listener
	// guarded by proxy.mu (a Service may change under a listener)
	svc  *corev1.Service
	port corev1.ServicePort
}

// start makes the proxy ready; it serves until ctx ends, then closes its
// listeners and connections.
func (p *proxy) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx = ctx
	p.listeners = map[netip.AddrPort]*proxyListener{}
	p.failed = map[netip.AddrPort]string{}
	context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stopped = true
		for a, l := range p.listeners {
			l.ln.Close()
			delete(p.listeners, a)
		}
	})
}

// wait waits for every listener and connection to end, after ctx ended.
func (p *proxy) wait() { p.wg.Wait() }

func (p *proxy) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// sync listens for every TCP port of services and stops listening for the
// ports that are gone.
func (p *proxy) sync(services []*corev1.Service) {
	want := map[netip.AddrPort]*proxyListener{}
	for _, svc := range services {
		if p.Namespaces != nil && !p.Namespaces[svc.Namespace] {
			continue
		}
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil {
			continue // headless, or not yet allocated
		}
		addr, ok := ServiceAddr(ip)
		if !ok {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
				continue
			}
			want[netip.AddrPortFrom(addr, uint16(sp.Port))] = &proxyListener{svc: svc, port: sp}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.listeners == nil {
		return
	}
	for a, l := range p.listeners {
		if w, ok := want[a]; ok {
			l.svc, l.port = w.svc, w.port
			continue
		}
		l.ln.Close()
		delete(p.listeners, a)
	}
	for a, w := range want {
		if _, ok := p.listeners[a]; ok {
			continue
		}
		ln, err := net.Listen("tcp", a.String())
		if err != nil {
			if p.failed[a] != err.Error() {
				p.log().Warn("sluice-hostnode: proxy cannot listen", "service", w.svc.Namespace+"/"+w.svc.Name, "address", a, "error", err)
				p.failed[a] = err.Error()
			}
			continue
		}
		delete(p.failed, a)
		w.ln = ln
		p.listeners[a] = w
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.accept(w)
		}()
	}
	for a := range p.failed {
		if _, ok := want[a]; !ok {
			delete(p.failed, a)
		}
	}
}

// accept serves a listener until it is closed.
func (p *proxy) accept(l *proxyListener) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c, l)
		}()
	}
}

// serve relays one client connection to a backend.
func (p *proxy) serve(client net.Conn, l *proxyListener) {
	backends := p.backends(l)
	if len(backends) == 0 {
		client.Close()
		return
	}
	to := p.DialTimeout
	if to <= 0 {
		to = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(p.ctx, to)
	backend, err := (&net.Dialer{}).DialContext(ctx, "tcp", backends[rand.IntN(len(backends))])
	cancel()
	if err != nil {
		p.log().Debug("sluice-hostnode: proxy backend unreachable", "error", err)
		client.Close()
		return
	}
	relay(p.ctx, client, backend, p.log())
}

// backends are the addresses a connection to the listener may go to.
func (p *proxy) backends(l *proxyListener) []string {
	p.mu.Lock()
	svc, port := l.svc, l.port
	p.mu.Unlock()
	if b, ok := p.Static[ServicePortKey{Namespace: svc.Namespace, Name: svc.Name, Port: port.Port}]; ok {
		return []string{b}
	}
	if len(svc.Spec.Selector) == 0 || p.Pods == nil {
		return nil
	}
	return p.Pods(svc.Namespace, labels.SelectorFromSet(svc.Spec.Selector), port)
}

// relay copies both ways until both directions ended, passing on each
// half-close, and closes both connections; ctx ending closes them at once.
func relay(ctx context.Context, client, backend net.Conn, log *slog.Logger) {
	stop := context.AfterFunc(ctx, func() {
		client.Close()
		backend.Close()
	})
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { copyHalf(backend, client, "client to backend", log) })
	wg.Go(func() { copyHalf(client, backend, "backend to client", log) })
	wg.Wait()
	client.Close()
	backend.Close()
}

// copyHalf copies src to dst, then half-closes dst.
func copyHalf(dst, src net.Conn, direction string, log *slog.Logger) {
	if _, err := io.Copy(dst, src); err != nil {
		log.Debug("sluice-hostnode: proxy copy ended", "direction", direction, "error", err)
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite() //nolint:errcheck // the peer may be gone
		return
	}
	dst.Close()
}
