package tunnel

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Directions of sluice_tunnel_bytes_total, seen from the cluster: BytesOut
// is carried from the cluster to the site, BytesIn from the site to the
// cluster.
const (
	BytesIn  = "in"
	BytesOut = "out"
)

// Reasons of sluice_tunnel_refused_total.
const (
	// RefusedNoNode: no compute node is known yet.
	RefusedNoNode = "no_node"
	// RefusedBackoff: the SSH connection is down and the next attempt is
	// not due yet.
	RefusedBackoff = "backoff"
	// RefusedHostKey: a host key did not match its pinned known_hosts.
	RefusedHostKey = "host_key"
	// RefusedConnect: the SSH connection could not be made.
	RefusedConnect = "connect"
	// RefusedDial: the far end of a connection could not be dialled (the
	// job's port for a forward, the cluster endpoint for a reverse).
	RefusedDial = "dial"
	// RefusedLimit: the forwarded port already carries its most
	// connections (Forward.MaxConns).
	RefusedLimit = "limit"
)

// Reasons of sluice_tunnel_connections_cut_total: why a forward closed a
// connection itself.
const (
	// CutIdle: nothing went either way for the idle timeout.
	CutIdle = "idle"
	// CutStalled: the client took none of the job's bytes within the stall
	// timeout.
	CutStalled = "stalled"
	// CutStallLimit: the client stopped reading while the forward already
	// held its most stalled connections (Forward.MaxStalled).
	CutStallLimit = "stall_limit"
)

// Metrics are a tunnel's Prometheus metrics. A nil *Metrics counts nothing:
// every method is safe to call on it.
type Metrics struct {
	up         prometheus.Gauge
	conns      *prometheus.CounterVec
	active     prometheus.Gauge
	bytes      *prometheus.CounterVec
	bytesIn    prometheus.Counter
	bytesOut   prometheus.Counter
	reconnects prometheus.Counter
	refused    *prometheus.CounterVec
	cut        *prometheus.CounterVec
	stalled    prometheus.Gauge
}

// NewMetrics makes the metrics of a tunnel of mode ("forward" or
// "reverse", the const label mode) and registers them with reg, if reg is
// not nil. A metric reg already holds for the same mode is shared rather
// than registered twice.
func NewMetrics(reg prometheus.Registerer, mode string) *Metrics {
	labels := prometheus.Labels{"mode": mode}
	m := &Metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "sluice_tunnel_up",
			Help:        "1 while the tunnel's SSH connection to the site is established, else 0.",
			ConstLabels: labels,
		}),
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "sluice_tunnel_connections_total",
			Help:        "Connections carried through the tunnel, by port (the forwarded port, or the job-side listen port of a reverse endpoint).",
			ConstLabels: labels,
		}, []string{"port"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "sluice_tunnel_connections_active",
			Help:        "Connections open through the tunnel.",
			ConstLabels: labels,
		}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "sluice_tunnel_bytes_total",
			Help:        "Bytes carried through the tunnel: out from the cluster to the site, in from the site to the cluster.",
			ConstLabels: labels,
		}, []string{"direction"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "sluice_tunnel_reconnects_total",
			Help:        "SSH connections to the site made again after one was lost.",
			ConstLabels: labels,
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "sluice_tunnel_refused_total",
			Help:        "Connections refused, by reason (no_node, backoff, host_key, connect, dial, limit).",
			ConstLabels: labels,
		}, []string{"reason"}),
		cut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "sluice_tunnel_connections_cut_total",
			Help:        "Connections the tunnel closed itself, by reason (idle, stalled, stall_limit).",
			ConstLabels: labels,
		}, []string{"reason"}),
		stalled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "sluice_tunnel_connections_stalled",
			Help:        "Connections whose client does not keep up: the job's bytes wait in the tunnel's memory, up to the SSH channel's window (2 MiB) each.",
			ConstLabels: labels,
		}),
	}
	if reg != nil {
		m.up = register(reg, m.up)
		m.conns = register(reg, m.conns)
		m.active = register(reg, m.active)
		m.bytes = register(reg, m.bytes)
		m.reconnects = register(reg, m.reconnects)
		m.refused = register(reg, m.refused)
		m.cut = register(reg, m.cut)
		m.stalled = register(reg, m.stalled)
	}
	m.bytesIn = m.bytes.WithLabelValues(BytesIn)
	m.bytesOut = m.bytes.WithLabelValues(BytesOut)
	return m
}

// register registers c with reg and returns it, or the collector reg
// already holds in its place. A collector reg refuses for another reason
// (a conflicting metric of the same name) still counts, unexported.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

// SetUp records whether the tunnel's SSH connection is established.
func (m *Metrics) SetUp(up bool) {
	if m == nil {
		return
	}
	if up {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}

// ConnOpened counts a connection carried for port; ConnClosed must follow
// it once the connection ends.
func (m *Metrics) ConnOpened(port int) {
	if m == nil {
		return
	}
	m.conns.WithLabelValues(strconv.Itoa(port)).Inc()
	m.active.Inc()
}

// ConnClosed records the end of a connection counted by ConnOpened.
func (m *Metrics) ConnClosed() {
	if m == nil {
		return
	}
	m.active.Dec()
}

// AddBytes counts n bytes carried in direction, BytesIn or BytesOut.
func (m *Metrics) AddBytes(direction string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	switch direction {
	case BytesIn:
		m.bytesIn.Add(float64(n))
	case BytesOut:
		m.bytesOut.Add(float64(n))
	default:
		m.bytes.WithLabelValues(direction).Add(float64(n))
	}
}

// Reconnect counts an SSH connection made again after one was lost.
func (m *Metrics) Reconnect() {
	if m == nil {
		return
	}
	m.reconnects.Inc()
}

// Refused counts a connection refused for reason (RefusedNoNode, …).
func (m *Metrics) Refused(reason string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(reason).Inc()
}

// Cut counts a connection the tunnel closed itself for reason (CutIdle, …).
func (m *Metrics) Cut(reason string) {
	if m == nil {
		return
	}
	m.cut.WithLabelValues(reason).Inc()
}

// Stalled adds delta to the connections whose client does not keep up.
func (m *Metrics) Stalled(delta int) {
	if m == nil {
		return
	}
	m.stalled.Add(float64(delta))
}
