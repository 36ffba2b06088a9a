package krb

import (
	"bytes"
	"errors"
	"fmt"
)

// The Kerberos V5 GSS mechanism, OID 1.2.840.113554.1.2.2, DER-encoded.
var mechOID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Token identifiers of the mechanism's context tokens (RFC 4121 §4.1).
var (
	tokAPReq    = [2]byte{0x01, 0x00}
	tokAPRep    = [2]byte{0x02, 0x00}
	tokKRBError = [2]byte{0x03, 0x00}
)

// frame wraps a context token in the GSS-API initial-context framing of
// RFC 2743 §3.1: [APPLICATION 0] { mech OID, token ID, inner }.
func frame(id [2]byte, inner []byte) []byte {
	n := len(mechOID) + 2 + len(inner)
	b := append([]byte{0x60}, derLength(n)...)
	b = append(b, mechOID...)
	b = append(b, id[:]...)
	return append(b, inner...)
}

func derLength(n int) []byte {
	if n < 0x80 {
		return []byte{byte(n)}
	}
	var l []byte
	for ; n > 0; n >>= 8 {
		l = append([]byte{byte(n)}, l...)
	}
	return append([]byte{0x80 | byte(len(l))}, l...)
}

// unframe checks the framing frame writes and returns the token ID and the
// inner token.
func unframe(b []byte) (id [2]byte, inner []byte, err error) {
	if len(b) < 2 || b[0] != 0x60 {
		return id, nil, errors.New("krb: token: not a GSS-API context token")
	}
	n, rest, err := readDERLength(b[1:])
	if err != nil {
		return id, nil, err
	}
	if n != len(rest) {
		return id, nil, fmt.Errorf("krb: token: length %d, %d bytes present", n, len(rest))
	}
	if !bytes.HasPrefix(rest, mechOID) {
		return id, nil, errors.New("krb: token: not the Kerberos V5 mechanism")
	}
	rest = rest[len(mechOID):]
	if len(rest) < 2 {
		return id, nil, errors.New("krb: token: no token ID")
	}
	copy(id[:], rest[:2])
	return id, rest[2:], nil
}

func readDERLength(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("krb: token: no length")
	}
	if b[0] < 0x80 {
		return int(b[0]), b[1:], nil
	}
	k := int(b[0] & 0x7f)
	if k == 0 || k > 3 || len(b) < 1+k {
		return 0, nil, errors.New("krb: token: bad length")
	}
	if b[1] == 0 {
		return 0, nil, errors.New("krb: token: length not in its shortest form")
	}
	n := 0
	for _, c := range b[1 : 1+k] {
		n = n<<8 | int(c)
	}
	if n < 0x80 {
		return 0, nil, errors.New("krb: token: length not in its shortest form")
	}
	return n, b[1+k:], nil
}
