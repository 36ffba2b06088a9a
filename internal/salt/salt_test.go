package salt

import (
	"encoding/hex"
	"testing"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := New()
		if err := Check(s); err != nil {
			t.Fatalf("New() = %q: %v", s, err)
		}
		if seen[s] {
			t.Fatalf("New() drew %q twice", s)
		}
		seen[s] = true
	}
}

func TestCheck(t *testing.T) {
	for _, bad := range []string{"", "00112233", "00112233445566778899AABBCCDDEEFF", "00112233445566778899aabbccddeefg",
		"00112233445566778899aabbccddeeff\n", " 0112233445566778899aabbccddeeff"} {
		if Check(bad) == nil {
			t.Errorf("Check(%q): got nil; want an error", bad)
		}
	}
}

func TestDerive(t *testing.T) {
	// Computed apart from this code, with Python's hmac and hashlib.
	const uid, s = "0b8f5a3c-6a53-4bd5-8c41-3a2f7a1d9e10", "00112233445566778899aabbccddeeff"
	sum := Derive(s, LabelSocketDir, uid)
	if got, want := hex.EncodeToString(sum[:16]), "d75a550f2954bd4f5c6fcf5bb401c235"; got != want {
		t.Errorf("Derive(socket directory) = %s…; want %s…", got, want)
	}
	if Derive(s, LabelRelayAddr, uid) == sum {
		t.Error("the labels give the same sum")
	}
}
