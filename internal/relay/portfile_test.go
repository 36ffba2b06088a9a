package relay

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParsePortFile(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want PortMap
		err  string
	}{
		{name: "empty", in: "", want: PortMap{}},
		{name: "one", in: "8080=41234\n", want: PortMap{8080: 41234}},
		{name: "no final newline", in: "8080=41234", want: PortMap{8080: 41234}},
		{name: "several, comments, blanks, spaces, CRLF", in: "# ports\n\n 8080 = 41234 \r\n9090=9091\n", want: PortMap{8080: 41234, 9090: 9091}},
		{name: "bare port", in: "41234\n", err: "line 1: \"41234\" is not containerPort=actualPort"},
		{name: "zero", in: "8080=0\n", err: "line 1: actual port"},
		{name: "too big", in: "8080=65536\n", err: "actual port"},
		{name: "sign", in: "+8080=1\n", err: "container port"},
		{name: "hex", in: "0x1f90=1\n", err: "container port"},
		{name: "twice", in: "8080=1\n8080=2\n", err: "line 2: port 8080 given twice"},
		{name: "two equals", in: "8080=1=2\n", err: "actual port"},
		{name: "second line bad", in: "8080=1\nx\n", err: "line 2"},
		{name: "too large", in: strings.Repeat("#", maxPortFileSize+1), err: "at most"},
		{name: "too many lines", in: strings.Repeat("\n", maxPortFileLines+1), err: "more than"},
	}
	for _, tc := range cases {
		got, err := ParsePortFile([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if got := (PortMap{8080: 41234}).Actual(8080); got != 41234 {
		t.Errorf("Actual(8080): got %d; want 41234", got)
	}
	if got := (PortMap{8080: 41234}).Actual(9090); got != 9090 {
		t.Errorf("Actual(9090), not in the file: got %d; want 9090", got)
	}
}

func FuzzParsePortFile(f *testing.F) {
	f.Add([]byte("8080=41234\n# c\n\n9090 = 1\r\n"))
	f.Add([]byte("8080=1\n8080=2\n"))
	f.Add([]byte("=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParsePortFile(b)
		if err != nil {
			return
		}
		// What it accepts, written back in the documented form, reads the same.
		var out strings.Builder
		for k, v := range m {
			if k == 0 || v == 0 {
				t.Fatalf("%q: port 0 in %v", b, m)
			}
			fmt.Fprintf(&out, "%d=%d\n", k, v)
		}
		again, err := ParsePortFile([]byte(out.String()))
		if err != nil || !maps.Equal(m, again) {
			t.Errorf("%q: %v written back reads %v, %v", b, m, again, err)
		}
	})
}

func TestReadPortFile(t *testing.T) {
	me := uint32(os.Getuid())
	dir := t.TempDir()
	path := filepath.Join(dir, "ports")
	if m, err := readPortFile(path, me); err != nil || len(m) != 0 {
		t.Errorf("no file: got %v, %v; want an empty map", m, err)
	}
	if err := os.WriteFile(path, []byte("8080=41234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := readPortFile(path, me); err != nil || m.Actual(8080) != 41234 {
		t.Errorf("own file: got %v, %v; want 8080=41234", m, err)
	}
	if _, err := readPortFile(path, me+1); err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Errorf("another user's file: got %v; want it refused", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := readPortFile(path, me); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("file writable by others: got %v; want it refused", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := readPortFile(link, me); err == nil {
		t.Error("symbolic link: read; want it refused")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Without a writer, a blocking open would never return.
	if _, err := readPortFile(fifo, me); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: got %v; want it refused", err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("#", maxPortFileSize+10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readPortFile(path, me); err == nil {
		t.Error("oversized file: read; want it refused")
	}
}
