package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestForwardHeaderRoundTrip(t *testing.T) {
	for _, port := range []uint16{1, 80, 8080, 65535} {
		h := ForwardHeader(port)
		if len(h) != forwardHeaderLen {
			t.Fatalf("ForwardHeader(%d): %d bytes; want %d", port, len(h), forwardHeaderLen)
		}
		got, err := ParseForwardHeader(h)
		if err != nil || got != port {
			t.Errorf("ParseForwardHeader(ForwardHeader(%d)): got %d, %v", port, got, err)
		}
	}
	// The layout the gateway and docs/architecture.md rely on.
	if got, want := ForwardHeader(8080), []byte("SLFW\x01\x00\x1f\x90"); !bytes.Equal(got, want) {
		t.Errorf("ForwardHeader(8080): got %q; want %q", got, want)
	}
}

func TestParseForwardHeaderRefuses(t *testing.T) {
	cases := []struct {
		name string
		in   string
		err  string
	}{
		{"empty", "", "0 bytes"},
		{"short", "SLFW\x01\x00\x1f", "7 bytes"},
		{"long", "SLFW\x01\x00\x1f\x90x", "9 bytes"},
		{"magic", "GET / HT", "magic"},
		{"version 0", "SLFW\x00\x00\x1f\x90", "version 0"},
		{"version 2", "SLFW\x02\x00\x1f\x90", "version 2"},
		{"flags", "SLFW\x01\x80\x1f\x90", "unknown flags"},
		{"port 0", "SLFW\x01\x00\x00\x00", "port 0"},
	}
	for _, tc := range cases {
		_, err := ParseForwardHeader([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v; want an error with %q", tc.name, err, tc.err)
		}
	}
}

// replyConn answers a header with reply and records what was written.
type replyConn struct {
	r       *strings.Reader
	written bytes.Buffer
}

func (c *replyConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *replyConn) Write(p []byte) (int, error) { return c.written.Write(p) }

func TestOpenForward(t *testing.T) {
	cases := []struct {
		name   string
		reply  string
		reason string // of a *RefusedError
		err    string // of another error
		rest   string // left unread for the caller
	}{
		{name: "ok", reply: "ok\nHTTP/1.1 200 OK\r\n", rest: "HTTP/1.1 200 OK\r\n"},
		{name: "refused", reply: "refused: port 8080: listener 127.0.0.1:8080 owned by uid 1002, not the job's uid 1001\n",
			reason: "port 8080: listener 127.0.0.1:8080 owned by uid 1002, not the job's uid 1001"},
		{name: "closed", reply: "", err: "closed after 0 bytes"},
		{name: "cut", reply: "ok", err: "closed after 2 bytes"},
		{name: "garbage", reply: "SSH-2.0-OpenSSH\n", err: "unexpected answer"},
		{name: "too long", reply: strings.Repeat("x", 10000) + "\n", err: "longer than 512"},
	}
	for _, tc := range cases {
		c := &replyConn{r: strings.NewReader(tc.reply)}
		err := OpenForward(c, 8080)
		if !bytes.Equal(c.written.Bytes(), ForwardHeader(8080)) {
			t.Errorf("%s: wrote %q; want the header", tc.name, c.written.Bytes())
		}
		var rf *RefusedError
		switch {
		case tc.reason != "":
			if !errors.As(err, &rf) || rf.Reason != tc.reason {
				t.Errorf("%s: got %v; want a refusal %q", tc.name, err, tc.reason)
			}
		case tc.err != "":
			if err == nil || errors.As(err, &rf) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v; want an error with %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: got %v; want nil", tc.name, err)
		}
		if rest, _ := io.ReadAll(c.r); tc.rest != "" && string(rest) != tc.rest {
			t.Errorf("%s: left %q unread; want %q", tc.name, rest, tc.rest)
		}
	}
}

func TestRefusalLine(t *testing.T) {
	for _, reason := range []string{"short", "two\nlines\r\x00", strings.Repeat("é", 600)} {
		for _, report := range []bool{false, true} {
			line := refusalLine(reason, report)
			if len(line) > maxReplyLen || bytes.IndexByte(line, '\n') != len(line)-1 || !utf8.Valid(line) {
				t.Errorf("refusalLine(%.20q, %v): %q is not one valid line of at most %d bytes", reason, report, line, maxReplyLen)
			}
			err := readForwardReply(bytes.NewReader(line))
			var rf *RefusedError
			if !errors.As(err, &rf) || !strings.HasPrefix(reason, strings.Fields(rf.Reason)[0]) || rf.Report != report {
				t.Errorf("refusalLine(%.20q, %v) read back: %v (%+v)", reason, report, err, rf)
			}
		}
	}
}

func FuzzParseForwardHeader(f *testing.F) {
	f.Add(ForwardHeader(8080))
	f.Add([]byte("SLFW\x02\x00\x00\x01"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		port, err := ParseForwardHeader(b)
		if err != nil {
			return
		}
		if port == 0 || !bytes.Equal(ForwardHeader(port), b) {
			t.Errorf("ParseForwardHeader(%q) = %d, which does not encode back to it", b, port)
		}
	})
}

func FuzzReadForwardReply(f *testing.F) {
	f.Add([]byte("ok\nrest"))
	f.Add([]byte("refused: why\n"))
	f.Add([]byte("refused: \xff\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		err := readForwardReply(r)
		// It reads up to the first newline and no further.
		want := len(b)
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < maxReplyLen {
			want = i + 1
		} else if len(b) >= maxReplyLen {
			want = maxReplyLen
		}
		if read := len(b) - r.Len(); read != want {
			t.Errorf("read %d bytes of %q; want %d", read, b, want)
		}
		var rf *RefusedError
		if errors.As(err, &rf) && (!utf8.ValidString(rf.Reason) || strings.Contains(rf.Reason, "\n")) {
			t.Errorf("reason %q is not one valid line", rf.Reason)
		}
		if err == nil && !bytes.HasPrefix(b, []byte("ok\n")) {
			t.Errorf("%q accepted", b)
		}
	})
}

func TestOpenForwardContext(t *testing.T) {
	near, far := net.Pipe()
	defer far.Close()
	go io.Copy(io.Discard, far) // takes the header, never answers
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := OpenForwardContext(ctx, near, 8080)
	if err == nil {
		t.Fatal("got nil from a relay that never answers; want an error")
	}
	if _, werr := near.Write([]byte("x")); !errors.Is(werr, io.ErrClosedPipe) {
		t.Errorf("after giving up: write got %v; want the connection closed", werr)
	}

	near, far = net.Pipe()
	defer far.Close()
	go func() {
		io.ReadFull(far, make([]byte, forwardHeaderLen))
		io.WriteString(far, "ok\n")
	}()
	if err := OpenForwardContext(context.Background(), near, 8080); err != nil {
		t.Errorf("got %v; want nil", err)
	}
	near.Close()
}
