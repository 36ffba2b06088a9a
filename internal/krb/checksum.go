package krb

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// GSS context flags (RFC 2743, RFC 4121 §4.1.1.1), as the checksum carries
// them.
const (
	FlagDeleg    uint32 = 1
	FlagMutual   uint32 = 2
	FlagReplay   uint32 = 4
	FlagSequence uint32 = 8
	FlagConf     uint32 = 16
	FlagInteg    uint32 = 32
)

// ChecksumType is the authenticator checksum type of the Kerberos GSS
// mechanism (RFC 4121 §4.1.1).
const ChecksumType = 0x8003

// maxCred bounds a KRB-CRED in the checksum: its length field has 16 bits.
const maxCred = 0xffff

// Checksum builds the authenticator checksum of RFC 4121 §4.1.1: the length
// of the channel bindings hash (16), the hash (zeros: SSH binds the session
// through the MIC instead), the context flags, and, when cred is not nil,
// the delegation option 1, its length and cred (a KRB-CRED holding the
// forwarded TGT) — FlagDeleg is then set whatever flags says.
func Checksum(flags uint32, cred []byte) ([]byte, error) {
	b := make([]byte, 24, 28+len(cred))
	binary.LittleEndian.PutUint32(b[0:4], 16)
	if cred == nil {
		binary.LittleEndian.PutUint32(b[20:24], flags&^FlagDeleg)
		return b, nil
	}
	if len(cred) == 0 || len(cred) > maxCred {
		return nil, fmt.Errorf("krb: checksum: a KRB-CRED of %d bytes cannot be delegated", len(cred))
	}
	binary.LittleEndian.PutUint32(b[20:24], flags|FlagDeleg)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(cred)))
	return append(b, cred...), nil
}

// ParseChecksum reads a checksum Checksum built: the flags and the
// delegated KRB-CRED, if any.
func ParseChecksum(b []byte) (flags uint32, cred []byte, err error) {
	if len(b) < 24 {
		return 0, nil, errors.New("krb: checksum: shorter than 24 bytes")
	}
	if n := binary.LittleEndian.Uint32(b[0:4]); n != 16 {
		return 0, nil, fmt.Errorf("krb: checksum: channel bindings length %d, want 16", n)
	}
	flags = binary.LittleEndian.Uint32(b[20:24])
	if flags&FlagDeleg == 0 {
		return flags, nil, nil
	}
	if len(b) < 28 {
		return 0, nil, errors.New("krb: checksum: delegation flag without a delegation option")
	}
	if opt := binary.LittleEndian.Uint16(b[24:26]); opt != 1 {
		return 0, nil, fmt.Errorf("krb: checksum: delegation option %d, want 1", opt)
	}
	n := int(binary.LittleEndian.Uint16(b[26:28]))
	if len(b) < 28+n {
		return 0, nil, fmt.Errorf("krb: checksum: delegation of %d bytes, %d present", n, len(b)-28)
	}
	return flags, b[28 : 28+n], nil
}
