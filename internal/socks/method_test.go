package socks

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// rw is a client's side of a negotiation: what it sends, and what it gets.
type rw struct {
	io.Reader
	bytes.Buffer
}

func (r *rw) Read(p []byte) (int, error) { return r.Reader.Read(p) }

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name     string
		greeting []byte
		answer   []byte
		err      error // nil, errNoAcceptableMethod, or io.EOF/io.ErrUnexpectedEOF
		wantErr  bool
		unread   int
	}{
		{name: "no auth only", greeting: []byte{5, 1, 0}, answer: []byte{5, 0}},
		{name: "no auth among others", greeting: []byte{5, 3, 2, 1, 0}, answer: []byte{5, 0}},
		{name: "request sent along", greeting: []byte{5, 1, 0, 5, 1, 0}, answer: []byte{5, 0}, unread: 3},
		{name: "password only", greeting: []byte{5, 1, 2}, answer: []byte{5, 0xff}, err: errNoAcceptableMethod},
		{name: "no methods", greeting: []byte{5, 0}, answer: []byte{5, 0xff}, err: errNoAcceptableMethod},
		{name: "255 methods without no auth", greeting: append([]byte{5, 255}, bytes.Repeat([]byte{3}, 255)...),
			answer: []byte{5, 0xff}, err: errNoAcceptableMethod},
		{name: "socks4", greeting: []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, wantErr: true, unread: 7},
		{name: "empty", greeting: nil, err: io.EOF},
		{name: "version only", greeting: []byte{5}, err: io.ErrUnexpectedEOF},
		{name: "methods cut", greeting: []byte{5, 3, 0}, err: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := bytes.NewReader(tt.greeting)
			c := &rw{Reader: in}
			err := negotiate(c)
			switch {
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("got %v; want %v", err, tt.err)
			case tt.err == nil && tt.wantErr != (err != nil):
				t.Errorf("got error %v; want error %v", err, tt.wantErr)
			}
			if !bytes.Equal(c.Bytes(), tt.answer) {
				t.Errorf("answer: got % x; want % x", c.Bytes(), tt.answer)
			}
			if in.Len() != tt.unread {
				t.Errorf("left unread: got %d bytes; want %d", in.Len(), tt.unread)
			}
		})
	}
}
