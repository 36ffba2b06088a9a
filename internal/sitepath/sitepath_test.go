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
