// Command echoserver is the rig tests' TCP server on the compute node: it
// listens on the address given and sends back what each client sends,
// half-closing after the client's EOF (socat's echo loses data under
// concurrent clients); with -source, it sends each client zeros without
// end instead, as a job serving a large download does.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	args := os.Args[1:]
	source := len(args) == 2 && args[0] == "-source"
	if source {
		args = args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: echoserver [-source] HOST:PORT")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", args[0])
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
			if source {
				go io.Copy(io.Discard, c)
				zeros := make([]byte, 32<<10)
				for {
					if _, err := c.Write(zeros); err != nil {
						return
					}
				}
			}
			io.Copy(c, c)
			c.(*net.TCPConn).CloseWrite()
		}()
	}
}
