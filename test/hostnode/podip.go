package hostnode

import (
	"errors"
	"hash/fnv"
	"net/netip"
	"sync"
)

// podIPPrefix holds the pods' addresses: every address of 127.0.0.0/8 is
// the host's own on Linux, so a process binds its pod IP with no set-up.
var podIPPrefix = netip.MustParsePrefix("127.80.0.0/16")

// errNoPodIP is returned when every pod address is taken.
var errNoPodIP = errors.New("pod IP: 127.80.0.0/16 is exhausted")

// podIPs hands out pod addresses: the address derived from the pod's UID,
// or the next free one after it when that is taken. The zero value is
// ready to use.
type podIPs struct {
	mu    sync.Mutex
	used  map[netip.Addr]string // address → pod UID
	byUID map[string]netip.Addr
}

// derivedIP is the address a pod UID maps to before collisions: 127.80.X.Y
// from a hash of the UID, never ending in .0 or .255.
func derivedIP(uid string) netip.Addr {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return nthPodIP(int(h.Sum32() % podIPCount))
}

// podIPCount is how many addresses the pods share: 256 values of X times
// 254 of Y (1-254).
const podIPCount = 256 * 254

// nthPodIP is the nth pod address (0 ≤ n < podIPCount).
func nthPodIP(n int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 80, byte(n / 254), byte(n%254 + 1)})
}

// podIPIndex is the inverse of nthPodIP.
func podIPIndex(a netip.Addr) int {
	b := a.As4()
	return int(b[2])*254 + int(b[3]) - 1
}

// Take returns the pod's address, the same one on every call for a UID
// until Release.
func (p *podIPs) Take(uid string) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		return a, nil
	}
	if p.used == nil {
		p.used, p.byUID = map[netip.Addr]string{}, map[string]netip.Addr{}
	}
	start := podIPIndex(derivedIP(uid))
	for i := range podIPCount {
		a := nthPodIP((start + i) % podIPCount)
		if _, taken := p.used[a]; !taken {
			p.used[a], p.byUID[uid] = uid, a
			return a, nil
		}
	}
	return netip.Addr{}, errNoPodIP
}

// Release frees the pod's address.
func (p *podIPs) Release(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		delete(p.used, a)
		delete(p.byUID, uid)
	}
}
