package sitepath

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for p, ok := range map[string]bool{
		"/scratch/alice/.sluice": true, "/a/b@c+d=e_f-g": true,
		"/": false, "": false, "rel": false, "/a/": false, "/a/../b": false, "/a//b": false,
		"/a:b": false, "/a%b": false, "/a#b": false, "/é": false, "/a b": false, "/a,b": false, "/a*": false,
		"/a\nb": false,
	} {
		if err := Check(p); (err == nil) != ok {
			t.Errorf("Check(%q) = %v; want ok %v", p, err, ok)
		}
	}
}

func TestCheckSocketRoot(t *testing.T) {
	uid := "0b5b0e4c-7f4e-4d3a-9b1e-2f1f0f6f3c11"
	fits := "/" + strings.Repeat("s", MaxSocketPath-len(uid)-len(LongestSocketName)-3) // the longest that fits
	for _, tt := range []struct {
		root, uid string
		ok        bool
	}{
		{fits, uid, true},
		{fits, "", true},
		{fits + "s", uid, false},
		{fits + "s", "", false},
		{"/tmp/sluice", uid + "-and-more", true},
		{"/tmp/a:b", uid, false},
	} {
		err := CheckSocketRoot(tt.root, tt.uid)
		if (err == nil) != tt.ok {
			t.Errorf("CheckSocketRoot(%q, %q) = %v; want ok %v", tt.root, tt.uid, err, tt.ok)
		}
		if err == nil && len(tt.root)+len("/"+uid+"/"+LongestSocketName) > MaxSocketPath && tt.uid == uid {
			t.Errorf("CheckSocketRoot(%q) took a root whose sockets do not fit", tt.root)
		}
	}
	if err := CheckSocketRoot(fits+"s", ""); err == nil || !strings.Contains(err.Error(), "at most 55 bytes") {
		t.Errorf("error %v; want it to give the longest root that fits, 55 bytes", err)
	}
}

func TestSocketDir(t *testing.T) {
	const uid = "0b8f5a3c-6a53-4bd5-8c41-3a2f7a1d9e10"
	// Computed apart from this code, with Python's hmac and hashlib.
	tests := []struct{ salt, want string }{
		{"00112233445566778899aabbccddeeff", "/tmp/sluice/d75a550f2954bd4f5c6fcf5bb401c235"},
		{"ffeeddccbbaa99887766554433221100", "/tmp/sluice/6d58ebfd2bf6fedde7b40eebd3d62440"},
		// a job submitted before salts keeps the name it was rendered with
		{"", "/tmp/sluice/" + uid},
	}
	for _, tt := range tests {
		got := SocketDir("/tmp/sluice", uid, tt.salt)
		if got != tt.want {
			t.Errorf("SocketDir(salt %q) = %s; want %s", tt.salt, got, tt.want)
		}
		if err := Check(got); err != nil || len(got)-len("/tmp/sluice/") > PodUIDLength {
			t.Errorf("SocketDir(salt %q) = %s: %v, or longer than a UID, which CheckSocketRoot counts with", tt.salt, got, err)
		}
	}
}
