//go:build bench

package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice-hpc/sluice/bench/internal/echo"
)

// The first byte a client sends tells the server what to do with the
// connection.
const (
	opEcho   = echo.Op // send back every byte until EOF
	opSink   = 'S'     // read frames until the last, then send the count as 8 bytes
	opSource = 'D'     // send bytes until the client goes away
)

// copyBuf is the size of the buffers the server and the client write with.
const copyBuf = 64 << 10

// serveMain is the "serve" subcommand: the server at the far end of every
// chain. It listens on -listen, prints the bound address on standard output
// and serves until SIGTERM or SIGINT.
func serveMain(args []string) int {
	fs := flag.NewFlagSet("tunnelrev serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tunnelrev serve:", err)
		return 1
	}
	fmt.Println(ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return 0
			}
			continue
		}
		go serveConn(c)
	}
}

// serveConn handles one connection by its first byte.
func serveConn(c net.Conn) {
	defer c.Close()
	var op [1]byte
	if _, err := io.ReadFull(c, op[:]); err != nil {
		return
	}
	switch op[0] {
	case opEcho:
		echo.Serve(c, make([]byte, copyBuf))
	case opSink:
		sink(c)
	case opSource:
		buf := make([]byte, copyBuf)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
}

// Frames of an upload are copyBuf bytes; the first byte of each says
// whether more follow. The upload does not depend on half-closing, which
// socat cuts short (-t, 0.5s by default).
const (
	frameMore = 0
	frameLast = 1
)

// sink reads frames until the last and sends back the bytes read.
func sink(c net.Conn) {
	buf := make([]byte, copyBuf)
	var n uint64
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		n += uint64(len(buf))
		if buf[0] == frameLast {
			break
		}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	c.Write(b[:])
}
