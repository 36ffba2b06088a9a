// Package kubeconfig loads the API server's client configuration the way
// every sluice command does: from a kubeconfig file when one is named,
// else from the pod it runs in.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Load loads the kubeconfig file, or the in-cluster configuration when
// file is empty.
func Load(file string) (*rest.Config, error) {
	if file == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (or set --kubeconfig): %w", err)
		}
		return rc, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", file, err)
	}
	return rc, nil
}
