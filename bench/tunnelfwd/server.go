//go:build bench

package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/sluice-hpc/sluice/bench/internal/echo"
)

// serveMain is `tunnelfwd serve -addr 127.0.0.1:PORT`, the job server. The
// benchmark runs it on the compute node as the site user. It prints
// "listening ADDR" once it listens, and exits when its standard input ends,
// so that it does not outlive the benchmark whatever happens to it.
func serveMain(args []string) int {
	fs := flag.NewFlagSet("tunnelfwd serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tunnelfwd serve:", err)
		return 1
	}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		os.Exit(0)
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tunnelfwd serve: accept:", err)
			return 1
		}
		go handle(conn)
	}
}

// handle serves one connection: its first byte names the operation.
func handle(conn net.Conn) {
	defer conn.Close()
	var op [1]byte
	if _, err := io.ReadFull(conn, op[:]); err != nil {
		return
	}
	switch op[0] {
	case opDownload:
		buf := make([]byte, chunk)
		for i := range buf {
			buf[i] = byte(i)
		}
		for {
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	case opUpload:
		_, _ = io.Copy(io.Discard, conn)
	case opEcho:
		echo.Serve(conn, make([]byte, 4096))
	case opPing:
		buf := make([]byte, pingSize)
		for {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}
}
