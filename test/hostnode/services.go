package hostnode

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// serviceTable keeps the cluster's Services, for the hosts files and the
// proxy. The zero value is ready to use.
type serviceTable struct {
	mu    sync.Mutex
	byKey map[string]*corev1.Service
}

// set adds or replaces a Service.
func (t *serviceTable) set(svc *corev1.Service) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byKey == nil {
		t.byKey = map[string]*corev1.Service{}
	}
	t.byKey[svc.Namespace+"/"+svc.Name] = svc
}

// remove drops a Service.
func (t *serviceTable) remove(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byKey, namespace+"/"+name)
}

// list is every Service, by namespace and name.
func (t *serviceTable) list() []*corev1.Service {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*corev1.Service, 0, len(t.byKey))
	for _, s := range t.byKey {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *corev1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// hosts are the Services that have a proxy address, for /etc/hosts.
func (t *serviceTable) hosts() []serviceHost {
	var out []serviceHost
	for _, s := range t.list() {
		ip, err := netip.ParseAddr(s.Spec.ClusterIP)
		if err != nil {
			continue
		}
		if addr, ok := ServiceAddr(ip); ok {
			out = append(out, serviceHost{Namespace: s.Namespace, Name: s.Name, Addr: addr})
		}
	}
	return out
}
