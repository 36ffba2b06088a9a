// Command echoserver is the rig tests' TCP echo server on the compute node:
// it listens on the address given and sends back what each client sends,
// half-closing after the client's EOF. (socat's echo loses data under
// concurrent clients.)
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: echoserver HOST:PORT")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
			c.(*net.TCPConn).CloseWrite()
		}()
	}
}
