package hostnode

import (
	"net/netip"
	"testing"
)

func TestServiceAddr(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"10.96.0.1", "127.96.0.1", true},
		{"10.96.12.200", "127.96.12.200", true},
		{"10.96.255.255", "127.96.255.255", true},
		{"::ffff:10.96.3.4", "127.96.3.4", true},
		{"10.97.0.1", "", false},
		{"192.168.0.1", "", false},
		{"fd00::1", "", false},
	} {
		got, ok := ServiceAddr(netip.MustParseAddr(tc.in))
		if ok != tc.ok || (ok && got.String() != tc.want) {
			t.Errorf("ServiceAddr(%s) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := ServiceAddr(netip.Addr{}); ok {
		t.Error("ServiceAddr(zero) reports true")
	}
}

var testServices = []serviceHost{
	{Namespace: "default", Name: "redis", Addr: netip.MustParseAddr("127.96.0.20")},
	{Namespace: "team-shadow", Name: "sluice-abc", Addr: netip.MustParseAddr("127.96.4.7")},
	{Namespace: "default", Name: "kubernetes", Addr: netip.MustParseAddr("127.96.0.1")},
}

func TestPodHostsFile(t *testing.T) {
	got := string(podHostsFile("team-shadow", "sluice-abc-5d8f-x2x", netip.MustParseAddr("127.80.3.9"), testServices))
	want := `# /etc/hosts of pod team-shadow/sluice-abc-5d8f-x2x, written by sluice-hostnode
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
127.80.3.9	sluice-abc-5d8f-x2x
127.96.0.1	kubernetes.default.svc.cluster.local	kubernetes.default.svc	kubernetes.default
127.96.0.20	redis.default.svc.cluster.local	redis.default.svc	redis.default
127.96.4.7	sluice-abc.team-shadow.svc.cluster.local	sluice-abc.team-shadow.svc	sluice-abc.team-shadow	sluice-abc
`
	if got != want {
		t.Errorf("podHostsFile:\n%s\nwant:\n%s", got, want)
	}
	if testServices[0].Name != "redis" {
		t.Error("podHostsFile reordered its argument")
	}
}

func TestPodHostsFileDefaultNamespace(t *testing.T) {
	got := string(podHostsFile("default", "p", netip.MustParseAddr("127.80.0.1"), testServices[:1]))
	want := `# /etc/hosts of pod default/p, written by sluice-hostnode
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
127.80.0.1	p
127.96.0.20	redis.default.svc.cluster.local	redis.default.svc	redis.default	redis
`
	if got != want {
		t.Errorf("podHostsFile:\n%s\nwant:\n%s", got, want)
	}
}

func TestHostsMapFile(t *testing.T) {
	got := string(hostsMapFile(testServices))
	want := `# Services of the cluster on the proxy addresses of sluice-hostnode
127.96.0.1	kubernetes.default.svc.cluster.local	kubernetes.default.svc	kubernetes.default
127.96.0.20	redis.default.svc.cluster.local	redis.default.svc	redis.default
127.96.4.7	sluice-abc.team-shadow.svc.cluster.local	sluice-abc.team-shadow.svc	sluice-abc.team-shadow
`
	if got != want {
		t.Errorf("hostsMapFile:\n%s\nwant:\n%s", got, want)
	}
}
