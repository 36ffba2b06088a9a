package hostnode

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// echoServer echoes each connection until the client half-closes, then
// writes "bye" and closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				io.WriteString(c, "bye")
			}()
		}
	}()
	return ln.Addr().String()
}

func testService(ns, name, clusterIP string, selector map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Selector: selector, Ports: ports},
	}
}

func startProxy(t *testing.T, p *proxy) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p.Log = slog.New(slog.DiscardHandler)
	p.start(ctx)
	t.Cleanup(func() {
		cancel()
		p.wait()
	})
}

// dialHalfClose sends msg, half-closes and reads the reply to the end.
func dialHalfClose(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read from %s: %v", addr, err)
	}
	return string(got)
}

// Ports from 40000 on, so that a host node of the rig does not take them.
func TestProxyStaticBackend(t *testing.T) {
	backend := echoServer(t)
	p := &proxy{Static: map[ServicePortKey]string{{Namespace: "default", Name: "redis", Port: 40379}: backend}}
	startProxy(t, p)
	p.sync([]*corev1.Service{testService("default", "redis", "10.96.250.1", nil, corev1.ServicePort{Port: 40379})})
	if got := dialHalfClose(t, "127.96.250.1:40379", "PING"); got != "PINGbye" {
		t.Errorf("through the proxy: %q; want %q (echo, then the reply after the half-close)", got, "PINGbye")
	}
}

func TestProxySelectorBackends(t *testing.T) {
	backend := echoServer(t)
	asked := make(chan string, 1)
	p := &proxy{Pods: func(ns string, sel labels.Selector, sp corev1.ServicePort) []string {
		asked <- ns + " " + sel.String() + " " + sp.TargetPort.String()
		return []string{backend}
	}}
	startProxy(t, p)
	svc := testService("team", "web", "10.96.250.2", map[string]string{"app": "web"},
		corev1.ServicePort{Name: "http", Port: 40080, TargetPort: intstr.FromString("http")})
	p.sync([]*corev1.Service{svc})
	if got := dialHalfClose(t, "127.96.250.2:40080", "GET"); got != "GETbye" {
		t.Errorf("through the proxy: %q", got)
	}
	if got := <-asked; got != "team app=web http" {
		t.Errorf("backends asked for %q", got)
	}
}

func TestProxyNoBackendClosesAtOnce(t *testing.T) {
	p := &proxy{Pods: func(string, labels.Selector, corev1.ServicePort) []string { return nil }}
	startProxy(t, p)
	p.sync([]*corev1.Service{
		testService("team", "none", "10.96.250.3", map[string]string{"app": "none"}, corev1.ServicePort{Port: 40081}),
		testService("team", "selectorless", "10.96.250.3", nil, corev1.ServicePort{Port: 40082}),
	})
	for _, addr := range []string{"127.96.250.3:40081", "127.96.250.3:40082"} {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		n, err := c.Read(make([]byte, 1))
		c.Close()
		if n != 0 || err == nil || time.Since(start) > 2*time.Second {
			t.Errorf("%s: read %d, %v after %v; want the connection closed at once", addr, n, err, time.Since(start))
		}
	}
}

func TestProxySyncRemovesAndSkips(t *testing.T) {
	backend := echoServer(t)
	key := ServicePortKey{Namespace: "ns", Name: "a", Port: 40090}
	p := &proxy{Static: map[ServicePortKey]string{key: backend}}
	startProxy(t, p)
	p.sync([]*corev1.Service{
		testService("ns", "a", "10.96.250.4", nil, corev1.ServicePort{Port: 40090}, corev1.ServicePort{Port: 40091, Protocol: corev1.ProtocolUDP}),
		testService("ns", "headless", "None", nil, corev1.ServicePort{Port: 40092}),
		testService("ns", "outside", "10.100.0.1", nil, corev1.ServicePort{Port: 40093}),
	})
	if got := listenerAddrs(p); len(got) != 1 || got[0] != "127.96.250.4:40090" {
		t.Errorf("listeners %v; want only the TCP port of the Service in range", got)
	}
	p.Namespaces = map[string]bool{"other": true}
	p.sync([]*corev1.Service{testService("ns", "a", "10.96.250.4", nil, corev1.ServicePort{Port: 40090})})
	if got := listenerAddrs(p); len(got) != 0 {
		t.Errorf("listeners for a namespace left out: %v", got)
	}
	p.Namespaces = nil
	p.sync(nil)
	if got := listenerAddrs(p); len(got) != 0 {
		t.Errorf("listeners after the Service went: %v", got)
	}
	if c, err := net.DialTimeout("tcp", "127.96.250.4:40090", time.Second); err == nil {
		c.Close()
		t.Error("the removed Service's address still accepts")
	}
}

func listenerAddrs(p *proxy) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for a := range p.listeners {
		out = append(out, a.String())
	}
	return out
}
