package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// The wire layout of the sock_diag messages used here, from
// include/uapi/linux/netlink.h and include/uapi/linux/inet_diag.h. Netlink
// headers and the integer fields of inet_diag are in host byte order; ports
// and addresses are in network byte order.
const (
	nlmsgHdrLen     = 16 // struct nlmsghdr
	inetDiagSockID  = 48 // struct inet_diag_sockid
	inetDiagReqLen  = 8 + inetDiagSockID
	inetDiagMsgLen  = 4 + inetDiagSockID + 20 // struct inet_diag_msg
	diagRequestSize = nlmsgHdrLen + inetDiagReqLen
	nlmsgErrMinLen  = 4 // the errno of struct nlmsgerr
	noCookie        = 0xffffffff
)

// diagMsg is the part of struct inet_diag_msg the relay reads.
type diagMsg struct {
	family uint8
	state  uint8
	local  netip.AddrPort // idiag_src, idiag_sport
	remote netip.AddrPort // idiag_dst, idiag_dport
	uid    uint32
	inode  uint32
}

// encodeDiagRequest builds a SOCK_DIAG_BY_FAMILY request without NLM_F_DUMP:
// an exact lookup of the TCP socket of the given family whose local address
// is local and remote address is remote. For AF_INET both addresses must be
// IPv4; for AF_INET6 they are written as 16 bytes (v4-mapped if IPv4).
func encodeDiagRequest(family uint8, local, remote netip.AddrPort, seq uint32) ([]byte, error) {
	b := make([]byte, diagRequestSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], diagRequestSize)
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], seq)
	ne.PutUint32(b[12:], 0) // the kernel
	r := b[nlmsgHdrLen:]
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	r[2] = 0                        // idiag_ext: no extensions
	r[3] = 0                        // pad
	ne.PutUint32(r[4:], 0xffffffff) // idiag_states: any
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	if err := putDiagAddr(id[4:20], family, local.Addr()); err != nil {
		return nil, fmt.Errorf("local address: %w", err)
	}
	if err := putDiagAddr(id[20:36], family, remote.Addr()); err != nil {
		return nil, fmt.Errorf("remote address: %w", err)
	}
	ne.PutUint32(id[36:], 0) // idiag_if: any interface
	ne.PutUint32(id[40:], noCookie)
	ne.PutUint32(id[44:], noCookie)
	return b, nil
}

func putDiagAddr(dst []byte, family uint8, a netip.Addr) error {
	switch family {
	case unix.AF_INET:
		a = a.Unmap()
		if !a.Is4() {
			return fmt.Errorf("%v is not IPv4", a)
		}
		v := a.As4()
		copy(dst, v[:])
	case unix.AF_INET6:
		if !a.IsValid() {
			return errors.New("invalid address")
		}
		v := a.As16()
		copy(dst, v[:])
	default:
		return fmt.Errorf("family %d is not AF_INET or AF_INET6", family)
	}
	return nil
}

// parseDiagResponse reads the netlink messages in b and returns the
// inet_diag_msg of the first SOCK_DIAG_BY_FAMILY message with sequence seq.
// An NLMSG_ERROR message gives its errno (ENOENT when no socket matched).
// Every length is checked against b before it is used.
func parseDiagResponse(b []byte, seq uint32) (diagMsg, error) {
	ne := binary.NativeEndian
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return diagMsg{}, fmt.Errorf("netlink header truncated: %d bytes", len(b))
		}
		n := ne.Uint32(b[0:])
		if n < nlmsgHdrLen || uint64(n) > uint64(len(b)) {
			return diagMsg{}, fmt.Errorf("netlink message length %d out of range (have %d bytes)", n, len(b))
		}
		typ := ne.Uint16(b[4:])
		msgSeq := ne.Uint32(b[8:])
		payload := b[nlmsgHdrLen:n]
		// Messages are padded to 4 bytes; the last one may not be.
		next := (uint64(n) + 3) &^ 3
		if next > uint64(len(b)) {
			next = uint64(len(b))
		}
		b = b[next:]
		if msgSeq != seq {
			continue
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if len(payload) < nlmsgErrMinLen {
				return diagMsg{}, fmt.Errorf("netlink error message truncated: %d bytes", len(payload))
			}
			errno := -int32(ne.Uint32(payload))
			if errno == 0 {
				continue // an acknowledgement
			}
			if errno < 0 {
				return diagMsg{}, fmt.Errorf("netlink error %d", errno)
			}
			return diagMsg{}, syscall.Errno(errno)
		case unix.NLMSG_DONE:
			return diagMsg{}, syscall.ENOENT
		case unix.SOCK_DIAG_BY_FAMILY:
			return decodeDiagMsg(payload)
		}
	}
	return diagMsg{}, errors.New("no answer in netlink response")
}

// decodeDiagMsg decodes a struct inet_diag_msg.
func decodeDiagMsg(p []byte) (diagMsg, error) {
	if len(p) < inetDiagMsgLen {
		return diagMsg{}, fmt.Errorf("inet_diag_msg truncated: %d bytes, want %d", len(p), inetDiagMsgLen)
	}
	ne := binary.NativeEndian
	m := diagMsg{family: p[0], state: p[1]}
	id := p[4 : 4+inetDiagSockID]
	sport := binary.BigEndian.Uint16(id[0:])
	dport := binary.BigEndian.Uint16(id[2:])
	var src, dst netip.Addr
	switch m.family {
	case unix.AF_INET:
		src = netip.AddrFrom4([4]byte(id[4:8]))
		dst = netip.AddrFrom4([4]byte(id[20:24]))
	case unix.AF_INET6:
		src = netip.AddrFrom16([16]byte(id[4:20]))
		dst = netip.AddrFrom16([16]byte(id[20:36]))
	default:
		return diagMsg{}, fmt.Errorf("inet_diag_msg family %d is not AF_INET or AF_INET6", m.family)
	}
	m.local = netip.AddrPortFrom(src, sport)
	m.remote = netip.AddrPortFrom(dst, dport)
	tail := p[4+inetDiagSockID:]
	// idiag_expires, idiag_rqueue, idiag_wqueue, idiag_uid, idiag_inode
	m.uid = ne.Uint32(tail[12:])
	m.inode = ne.Uint32(tail[16:])
	return m, nil
}
