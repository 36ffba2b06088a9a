// Command coredns is CoreDNS (github.com/coredns/coredns/coremain) with the
// plugins a cluster's DNS needs and no others, built from its Go module for
// the rig's coredns image. See hack/tools/build.sh and hack/tools/images.
package main

import (
	"github.com/coredns/coredns/coremain"

	// The plugins the rig's Corefile uses (their order of execution is
	// core/dnsserver's Directives, upstream's plugin.cfg).
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
