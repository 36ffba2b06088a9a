package socks

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
)

// version5 is the protocol version of every SOCKS5 message.
const version5 = 0x05

// Command is the command of a SOCKS5 request.
type Command byte

// The commands of RFC 1928; the server carries out CmdConnect only.
const (
	CmdConnect      Command = 0x01
	CmdBind         Command = 0x02
	CmdUDPAssociate Command = 0x03
)

func (c Command) String() string {
	switch c {
	case CmdConnect:
		return "CONNECT"
	case CmdBind:
		return "BIND"
	case CmdUDPAssociate:
		return "UDP ASSOCIATE"
	}
	return "command " + strconv.Itoa(int(c))
}

// Address types (ATYP) of requests and replies.
const (
	atypIPv4   = 0x01
	atypDomain = 0x03
	atypIPv6   = 0x04
)

// MaxRequestLen is the length of the longest request: VER CMD RSV ATYP,
// a length byte and 255 bytes of host name, and the port.
const MaxRequestLen = 4 + 1 + 255 + 2

// Request is a SOCKS5 request as the client sent it. Exactly one of Addr
// and Name is set.
type Request struct {
	Command Command
	// Addr is the destination address, when the client sent an IPv4 or
	// IPv6 address, or a host name that is an IP literal; else the zero
	// Addr. An IPv4-mapped IPv6 address is kept as sent.
	Addr netip.Addr
	// Name is the destination host name, when the client sent one that is
	// not an IP literal; else "". It is a valid host name (see
	// validHostname), possibly with a trailing dot.
	Name string
	// Port is the destination port, never 0.
	Port uint16
}

// Host is the destination host: the name, or the address in text form.
func (r *Request) Host() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Addr.String()
}

// Dest is the destination as "host:port", the form net.Dial takes.
func (r *Request) Dest() string {
	return net.JoinHostPort(r.Host(), strconv.Itoa(int(r.Port)))
}

// RequestError is a request the server refuses, with the reply it answers
// it with.
type RequestError struct {
	Reply Reply
	msg   string
}

func (e *RequestError) Error() string { return e.msg }

func refuse(reply Reply, format string, args ...any) *RequestError {
	return &RequestError{Reply: reply, msg: fmt.Sprintf(format, args...)}
}

// ReadRequest reads one SOCKS5 request from r, and no byte after it. A
// request that is well formed but cannot be served (a bad version, an
// unknown address type, a bad host name, port 0) gives a *RequestError
// holding the reply to send; a short read gives the reader's error
// (io.ErrUnexpectedEOF for a truncated request). The command is not
// checked: the caller answers those it does not carry out.
func ReadRequest(r io.Reader) (*Request, error) {
	req, err := readRequest(r)
	if err != nil {
		return nil, fmt.Errorf("socks: read request: %w", err)
	}
	return req, nil
}

// readRequest is ReadRequest, with errors not prefixed.
func readRequest(r io.Reader) (*Request, error) {
	var hdr [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	if hdr[0] != version5 {
		return nil, refuse(ReplyGeneralFailure, "request version %d, want 5", hdr[0])
	}
	// RSV (hdr[2]) is ignored, as a reserved field should be.
	req := &Request{Command: Command(hdr[1])}
	var buf [255 + 2]byte // the longest address and the port
	var b []byte
	switch hdr[3] {
	case atypIPv4:
		b = buf[:4+2]
	case atypIPv6:
		b = buf[:16+2]
	case atypDomain:
		if _, err := io.ReadFull(r, buf[:1]); err != nil {
			return nil, noEOF(err)
		}
		n := int(buf[0])
		if n == 0 {
			return nil, refuse(ReplyGeneralFailure, "empty host name")
		}
		b = buf[:n+2]
	default:
		return nil, refuse(ReplyAddressNotSupported, "address type %d not supported", hdr[3])
	}
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, noEOF(err)
	}
	addr, port := b[:len(b)-2], b[len(b)-2:]
	switch hdr[3] {
	case atypIPv4:
		req.Addr = netip.AddrFrom4([4]byte(addr))
	case atypIPv6:
		req.Addr = netip.AddrFrom16([16]byte(addr))
	case atypDomain:
		if err := req.setHost(string(addr)); err != nil {
			return nil, err
		}
	}
	req.Port = binary.BigEndian.Uint16(port)
	if req.Port == 0 {
		return nil, refuse(ReplyGeneralFailure, "destination port 0")
	}
	return req, nil
}

// setHost sets the destination from a host name sent by the client: an IP
// literal goes to Addr, a valid host name to Name.
func (r *Request) setHost(h string) error {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return refuse(ReplyGeneralFailure, "host %q: IPv6 address with a zone", h)
		}
		r.Addr = a
		return nil
	}
	if !validHostname(h) {
		return refuse(ReplyGeneralFailure, "host %q is not a valid host name", h)
	}
	r.Name = h
	return nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: a request that ends after
// its header is truncated, not absent.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendAddrPort appends the ATYP, address and port fields for ap: IPv4
// (also for an IPv4-mapped IPv6 address) or IPv6.
func appendAddrPort(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr().Unmap()
	if a.Is4() {
		b = append(b, atypIPv4)
	} else {
		b = append(b, atypIPv6)
	}
	b = append(b, a.AsSlice()...)
	return binary.BigEndian.AppendUint16(b, ap.Port())
}
