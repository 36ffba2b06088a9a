package krb

import (
	"bytes"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 100, 127 - 13, 200, 1000, 70000} {
		inner := bytes.Repeat([]byte{0xab}, n)
		b := frame(tokAPReq, inner)
		if b[0] != 0x60 {
			t.Fatalf("n=%d: tag %#x; want 0x60", n, b[0])
		}
		id, got, err := unframe(b)
		if err != nil || id != tokAPReq || !bytes.Equal(got, inner) {
			t.Fatalf("n=%d: got %x, %d bytes, %v; want %x and the inner token", n, id, len(got), err, tokAPReq)
		}
	}
}

func TestUnframeBad(t *testing.T) {
	good := frame(tokAPRep, []byte("rep"))
	otherMech := append([]byte{}, good...)
	otherMech[len(otherMech)-6] ^= 1 // last OID byte
	for name, b := range map[string][]byte{
		"empty":      nil,
		"tag":        append([]byte{0x61}, good[1:]...),
		"long":       append(append([]byte{}, good...), 0),
		"short":      good[:len(good)-1],
		"mechanism":  otherMech,
		"no id":      {0x60, 11, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02},
		"bad length": {0x60, 0x84, 1, 2, 3, 4},
		"long form":  append([]byte{0x60, 0x81, good[1]}, good[2:]...),
	} {
		if _, _, err := unframe(b); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// FuzzUnframe: a server's token never panics the reader, and what it
// accepts frames back to the same bytes.
func FuzzUnframe(f *testing.F) {
	f.Add(frame(tokAPRep, []byte("rep")))
	f.Add(frame(tokKRBError, bytes.Repeat([]byte{1}, 300)))
	f.Add([]byte{0x60, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, inner, err := unframe(b)
		if err != nil {
			return
		}
		if again := frame(id, inner); !bytes.Equal(again, b) {
			t.Fatalf("frame(unframe(%x)) = %x", b, again)
		}
	})
}

func FuzzParseChecksum(f *testing.F) {
	good, _ := Checksum(FlagMutual, []byte("cred"))
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		flags, cred, err := ParseChecksum(b)
		if err == nil && flags&FlagDeleg != 0 && cred == nil {
			t.Fatalf("%x: delegation flag and no KRB-CRED", b)
		}
	})
}
