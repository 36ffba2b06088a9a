// Command metrics-server is the Kubernetes metrics-server
// (sigs.k8s.io/metrics-server), built from its Go module for the rig: it
// scrapes the nodes' /metrics/resource, sluice-vk's included, and serves
// metrics.k8s.io through API aggregation, which `kubectl top` reads. See
// hack/tools/build.sh and hack/rig/lib/metrics.sh.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)

func main() {
	logs.InitLogs()
	cmd := app.NewMetricsServerCommand(genericapiserver.SetupSignalHandler())
	err := cmd.Execute()
	logs.FlushLogs()
	if err != nil {
		os.Exit(1)
	}
}
