package krb

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestChecksumWithoutDelegation(t *testing.T) {
	b, err := Checksum(FlagMutual|FlagInteg|FlagDeleg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 24 {
		t.Fatalf("length: got %d; want 24", len(b))
	}
	if got := binary.LittleEndian.Uint32(b[0:4]); got != 16 {
		t.Fatalf("Lgth: got %d; want 16", got)
	}
	if !bytes.Equal(b[4:20], make([]byte, 16)) {
		t.Fatalf("Bnd: got %x; want zeros", b[4:20])
	}
	// no KRB-CRED: the delegation flag is cleared whatever was asked
	if got := binary.LittleEndian.Uint32(b[20:24]); got != FlagMutual|FlagInteg {
		t.Fatalf("flags: got %#x; want %#x", got, FlagMutual|FlagInteg)
	}
}

func TestChecksumWithDelegation(t *testing.T) {
	cred := []byte("a KRB-CRED")
	b, err := Checksum(FlagMutual|FlagInteg, cred)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{16, 0, 0, 0}
	want = append(want, make([]byte, 16)...)
	want = append(want, 0x23, 0, 0, 0) // deleg 1 | mutual 2 | integ 32
	want = append(want, 1, 0, byte(len(cred)), 0)
	want = append(want, cred...)
	if !bytes.Equal(b, want) {
		t.Fatalf("checksum:\n got %x\nwant %x", b, want)
	}
	flags, got, err := ParseChecksum(b)
	if err != nil || flags != 0x23 || !bytes.Equal(got, cred) {
		t.Fatalf("ParseChecksum: got %#x %q %v; want 0x23 %q", flags, got, err, cred)
	}
}

func TestChecksumRefusesOversizedCred(t *testing.T) {
	if _, err := Checksum(0, make([]byte, maxCred+1)); err == nil {
		t.Fatal("a KRB-CRED over 65535 bytes: got no error")
	}
	if _, err := Checksum(0, []byte{}); err == nil {
		t.Fatal("an empty KRB-CRED: got no error")
	}
}

func TestParseChecksumBad(t *testing.T) {
	good, _ := Checksum(FlagMutual, []byte("cred"))
	for name, b := range map[string][]byte{
		"short":          good[:10],
		"lgth":           append([]byte{17}, good[1:]...),
		"deleg cut":      good[:26],
		"option":         append(append(append([]byte{}, good[:24]...), 2, 0), good[26:]...),
		"cred truncated": good[:len(good)-1],
	} {
		if _, _, err := ParseChecksum(b); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}
