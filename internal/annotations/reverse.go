package annotations

import (
	"net/netip"
)

// MaxForwards is the most forwards a pod may ask for. Each one is a
// listener of the job's relay, a remote forward of the shadow's SSH session
// and a socket on the node: a pod asking for thousands would hold as many
// ports and sockets of a shared node, and of the site's sshd, for a job that
// cannot use them all.
const MaxForwards = 64

// Reverse is everything a pod asks of the reverse tunnel (S5).
type Reverse struct {
	// Forwards are the endpoints, in the order the pod lists them; no two
	// share a ListenPort.
	Forwards []Forward
	// Bind is the IPv4 loopback address the job's relay holds, as the
	// pod's ReverseBind sets it; the zero Addr when the pod leaves it to
	// sluice, which derives one from the pod's salt (DeriveBind).
	Bind netip.Addr
	// SocksPort is the port of the SOCKS5 proxy on 127.0.0.1 of the node;
	// 0 when the pod asks for none. It is never a ListenPort of Forwards.
	SocksPort int
}

// Parse reads a pod's reverse tunnel annotations. It returns nil when the
// pod asks for no reverse tunnel: no forward and no SOCKS port. A
// ReverseBind alone asks for nothing, but it is validated all the same, so
// that a mistake in it is reported rather than ignored. The retired
// annotations are ignored.
//
// Errors about the annotations are *Refusal (ReasonMalformed,
// ReasonPortRepeats, ReasonSocksCollides, ReasonBadBind,
// ReasonTooManyForwards); the site's rules
// are Check's. podNamespace is the pod's; one that is not a DNS label is
// the caller's mistake and gives a plain error.
func Parse(annotations map[string]string, podNamespace string) (*Reverse, error) {
	forwards, err := ParseForwards(annotations[ReverseForwards], podNamespace)
	if err != nil {
		return nil, err
	}
	socks, _, err := ParseSocksPort(annotations[ReverseSocksPort])
	if err != nil {
		return nil, err
	}
	bind, err := ParseBind(annotations[ReverseBind])
	if err != nil {
		return nil, err
	}
	if len(forwards) == 0 && socks == 0 {
		return nil, nil
	}
	r := &Reverse{Forwards: forwards, Bind: bind, SocksPort: socks}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// validate checks what ties the annotations together: at most MaxForwards
// forwards, the listen ports distinct and the SOCKS port none of them. Parse and Check both call it,
// so that a Reverse built by hand is held to these two rules.
func (r *Reverse) validate() *Refusal {
	if n := len(r.Forwards); n > MaxForwards {
		return tooManyForwards(n)
	}
	seen := make(map[int]bool, len(r.Forwards))
	for _, f := range r.Forwards {
		if seen[f.ListenPort] {
			return refuseEntry(ReasonPortRepeats, ReverseForwards, f.String(), "port %d repeats", f.ListenPort)
		}
		seen[f.ListenPort] = true
	}
	if r.SocksPort != 0 && seen[r.SocksPort] {
		return refuse(ReasonSocksCollides, ReverseSocksPort,
			"port %d is also a listen port of %s", r.SocksPort, ReverseForwards)
	}
	return nil
}

func tooManyForwards(n int) *Refusal {
	return refuse(ReasonTooManyForwards, ReverseForwards, "%d forwards; a pod may ask for at most %d", n, MaxForwards)
}
