// Command pause is the rig's pod sandbox process (containerd's
// sandbox_image): it holds the pod's namespaces, reaps the orphans that the
// pod's shared PID namespace hands it, and exits on SIGTERM or SIGINT. Built
// static into a one-layer image by hack/rig/lib/node_image.sh, so that the
// rig's node never pulls one from a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
