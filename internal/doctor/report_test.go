package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestWriteText(t *testing.T) {
	r := &Report{Checks: []Check{
		{Name: "login", Status: OK, Found: "10.0.0.1:22 reached"},
		{Name: "stream-local", Status: Fail, Found: "refused", Fix: "set Network.SSH.Reverse.Sshd: userspace"},
		{Name: "gateway-ports", Status: Skip, Found: "not checked"},
		{Name: "slurm", Status: Warn, Found: "a\x1b[31mred\nline", Fix: "x"},
	}}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "OK    login          10.0.0.1:22 reached\n" +
		"FAIL  stream-local   refused — fix: set Network.SSH.Reverse.Sshd: userspace\n" +
		"SKIP  gateway-ports  not checked\n" +
		"WARN  slurm          a [31mred line — fix: x\n" +
		"4 checks: 1 failed, 1 warnings, 1 skipped\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if !r.Failed() {
		t.Error("Failed() = false with a FAIL line")
	}
}

func TestWriteJSON(t *testing.T) {
	r := &Report{Checks: []Check{
		{Name: "login", Status: OK, Found: "reached"},
		{Name: "auth", Status: Warn, Found: "bad\x00byte", Fix: "renew"},
	}}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Checks []Check `json:"checks"`
		Failed bool    `json:"failed"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("decode %s: %v", b.String(), err)
	}
	if got.Failed || len(got.Checks) != 2 || got.Checks[1] != (Check{Name: "auth", Status: Warn, Found: "bad byte", Fix: "renew"}) {
		t.Errorf("got %+v", got)
	}
	if strings.Contains(b.String(), `"fix": ""`) {
		t.Errorf("an empty fix is printed: %s", b.String())
	}
}

func TestCleanBoundsText(t *testing.T) {
	long := strings.Repeat("é", maxText) // 2 bytes each
	got := clean(long)
	if len(got) > maxText+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("clean of %d bytes gave %d bytes", len(long), len(got))
	}
	if !strings.HasPrefix(got, "é") || strings.ContainsRune(got[:len(got)-len("…")], '\uFFFD') {
		t.Error("clean cut a character in two")
	}
	if got := clean("a\tb\r\nc\u0085d"); got != "a b c d" {
		t.Errorf("clean = %q; want %q", got, "a b c d")
	}
}

func TestFind(t *testing.T) {
	r := &Report{}
	r.add(Check{Name: "a", Status: OK})
	if c, ok := r.Find("a"); !ok || c.Status != OK {
		t.Errorf("Find(a) = %+v, %v", c, ok)
	}
	if _, ok := r.Find("b"); ok {
		t.Error("Find(b) found a check never added")
	}
	if r.Failed() {
		t.Error("Failed() = true without a FAIL")
	}
}
