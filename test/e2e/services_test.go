//go:build e2e

package e2e

import (
	"context"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// externalRedis gives the test's namespace what the rig gives default: the
// Service `redis` without a selector and an EndpointSlice naming the rig's
// Redis outside the cluster (RIG_REDIS_EXT_ADDR), so that a bare "redis"
// in reverse-forwards reaches it through kube-proxy.
func (e *env) externalRedis() {
	ctx := context.Background()
	host, portText, err := net.SplitHostPort(e.rig.Get(e.t, "RIG_REDIS_EXT_ADDR"))
	if err != nil {
		e.t.Fatalf("RIG_REDIS_EXT_ADDR: %v", err)
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		e.t.Fatalf("RIG_REDIS_EXT_ADDR: %v", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "redis"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "redis", Port: 6379}}},
	}
	if _, err := e.client.CoreV1().Services(e.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create service %s/redis: %v", e.ns, err)
	}
	name, proto, p32, ready := "redis", corev1.ProtocolTCP, int32(port), true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "redis-external", Labels: map[string]string{
			discoveryv1.LabelServiceName: "redis",
			discoveryv1.LabelManagedBy:   "sluice-e2e",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &p32}},
	}
	if _, err := e.client.DiscoveryV1().EndpointSlices(e.ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create endpointslice %s/redis-external: %v", e.ns, err)
	}
}
