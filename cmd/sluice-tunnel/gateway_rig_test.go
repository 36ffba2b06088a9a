//go:build rig

package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/gateway/gatewaytest"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestGatewayModeRig runs the forward and the reverse tunnel with
// --gateway, the token file and no site flag, through a gateway that holds
// the rig's site connections, and carries data both ways.
func TestGatewayModeRig(t *testing.T) {
	r := testrig.Load(t)
	port := portPair(t)
	startNodeEcho(t, r, port)
	dir := socketDir(t)
	listen := 16379
	grant := &gateway.Grant{
		Pod:          gateway.PodRef{Namespace: "ns", Name: "web", UID: "uid-gateway-mode"},
		Node:         r.Get(t, "RIG_NODE_NAME"),
		SocketDir:    dir,
		ForwardPorts: []int32{int32(port)},
		SocketNames:  []string{"rev-" + strconv.Itoa(listen) + ".sock"},
	}
	tmp := t.TempDir()
	tokenFile := filepath.Join(tmp, "token")
	if err := os.WriteFile(tokenFile, []byte("the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.Serve(t, gatewaytest.RigSite(t, r, nil), gatewaytest.Grants{"the-token": grant})
	gw := []string{"--gateway=" + g.Addr, "--gateway-known-hosts=" + g.KnownHosts, "--gateway-token=" + tokenFile,
		"--node-file=" + writeNodeFile(t, r.Get(t, "RIG_NODE_NAME"))}

	fwd := startTunnel(t, "forward", append(gw, "--ports="+strconv.Itoa(port), "--listen=127.0.0.2")...)
	waitFor(t, 10*time.Second, "the forward listening", func() bool { return fwd.count("forward listening", nil) == 1 })
	echo(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(port)), randomBytes(256<<10))

	rev := startTunnel(t, "reverse", append(gw, "--socket-dir="+dir, "--forward="+strconv.Itoa(listen)+"="+startLocalEcho(t))...)
	sock := filepath.Join(dir, "rev-"+strconv.Itoa(listen)+".sock")
	waitFor(t, 20*time.Second, "reverse tunnel up", func() bool { return rev.count("reverse tunnel up", nil) == 1 })
	payload := "hello from the job\n" + strings.Repeat("0123456789", 10000)
	if out := throughSocket(t, r, sock, payload); out != payload {
		t.Fatalf("echo through the gateway's reverse tunnel gave %d bytes; want the %d sent", len(out), len(payload))
	}
	for _, p := range []*tunnelProc{fwd, rev} {
		if errs := p.linesAt("ERROR"); len(errs) > 0 {
			t.Errorf("error lines logged: %v", errs)
		}
		p.stop()
	}
}
