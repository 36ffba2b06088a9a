package hostnode

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// serviceCIDR is the rig's Service range (kube-apiserver
// --service-cluster-ip-range).
var serviceCIDR = netip.MustParsePrefix("10.96.0.0/16")

// ServiceAddr is the loopback address on which a host node serves the
// Service of ClusterIP clusterIP: 127.96.A.B for 10.96.A.B. It reports
// false for an address outside the rig's Service range 10.96.0.0/16 (and
// for "None", which does not parse).
func ServiceAddr(clusterIP netip.Addr) (netip.Addr, bool) {
	clusterIP = clusterIP.Unmap()
	if !serviceCIDR.Contains(clusterIP) {
		return netip.Addr{}, false
	}
	b := clusterIP.As4()
	return netip.AddrFrom4([4]byte{127, 96, b[2], b[3]}), true
}

// serviceHost is a Service as /etc/hosts names it: its names map to Addr,
// its proxy address.
type serviceHost struct {
	Namespace, Name string
	Addr            netip.Addr
}

// names are the Service's names as a pod of namespace podNS may write them:
// NAME.NS.svc.cluster.local, NAME.NS.svc and NAME.NS, and the bare NAME in
// the pod's own namespace. podNS "" leaves the bare name out.
func (s serviceHost) names(podNS string) []string {
	n := []string{
		s.Name + "." + s.Namespace + ".svc.cluster.local",
		s.Name + "." + s.Namespace + ".svc",
		s.Name + "." + s.Namespace,
	}
	if podNS != "" && podNS == s.Namespace {
		n = append(n, s.Name)
	}
	return n
}

// sortServiceHosts orders Services by namespace, then name, so that the
// files are the same whatever order the watch gave them in.
func sortServiceHosts(s []serviceHost) {
	slices.SortFunc(s, func(a, b serviceHost) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// podHostsFile renders the /etc/hosts a pod's processes see: localhost, the
// pod's hostname on its IP, and every Service on its proxy address.
func podHostsFile(namespace, hostname string, podIP netip.Addr, services []serviceHost) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# /etc/hosts of pod %s/%s, written by sluice-hostnode\n", namespace, hostname)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
	writeServiceLines(&b, namespace, services)
	return b.Bytes()
}

// hostsMapFile renders every Service with its qualified names only: the
// file a host node writes for tests on the host to look names up in.
func hostsMapFile(services []serviceHost) []byte {
	var b bytes.Buffer
	b.WriteString("# Services of the cluster on the proxy addresses of sluice-hostnode\n")
	writeServiceLines(&b, "", services)
	return b.Bytes()
}

func writeServiceLines(b *bytes.Buffer, podNS string, services []serviceHost) {
	s := slices.Clone(services)
	sortServiceHosts(s)
	for _, svc := range s {
		b.WriteString(svc.Addr.String())
		for _, n := range svc.names(podNS) {
			b.WriteString("\t" + n)
		}
		b.WriteByte('\n')
	}
}
