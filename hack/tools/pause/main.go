//go:build linux

// Command pause is the rig's pod sandbox process (the kubelet's pause
// image, built by hack/tools/images): it holds the pod's namespaces, does
// nothing else, reaps the zombies it inherits as PID 1 of a pod sharing its
// process namespace, and exits 0 on SIGINT or SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		if os.Args[1] == "-v" || os.Args[1] == "--version" {
			fmt.Println("pause (sluice)")
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "usage: pause [--version]")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
