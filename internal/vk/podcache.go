package vk

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// dropManagedFields is the pod informer's transform: the cache keeps no
// managed fields. sluice never reads them, and every copy of a pod the
// virtual kubelet holds (the provider's, the pod controller's last pod and
// last status) is made from the cached one, so with a few managers'
// entries of status fields each they cost every copy a kilobyte or more.
// The status the pod controller writes back carries none, and the API
// server then keeps the managed fields it has.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
