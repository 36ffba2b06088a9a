package hostnode

import (
	"fmt"
	"testing"
)

func TestDerivedIP(t *testing.T) {
	seen := map[string]bool{}
	for i := range 2000 {
		uid := fmt.Sprintf("0b6a4c1e-%04d-4f6e-9a57-1d2c3b4a5f60", i)
		a := derivedIP(uid)
		if !podIPPrefix.Contains(a) {
			t.Fatalf("derivedIP(%s) = %s; want it in %s", uid, a, podIPPrefix)
		}
		if b := a.As4(); b[3] == 0 || b[3] == 255 {
			t.Fatalf("derivedIP(%s) = %s; want no .0 or .255", uid, a)
		}
		if again := derivedIP(uid); again != a {
			t.Fatalf("derivedIP(%s) = %s then %s; want stable", uid, a, again)
		}
		seen[a.String()] = true
	}
	if len(seen) < 1900 {
		t.Errorf("2000 UIDs gave %d distinct addresses; want them spread", len(seen))
	}
}

func TestPodIPIndexRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 253, 254, 255, podIPCount - 1} {
		if got := podIPIndex(nthPodIP(n)); got != n {
			t.Errorf("podIPIndex(nthPodIP(%d)) = %d", n, got)
		}
	}
	if a := nthPodIP(podIPCount - 1); a.String() != "127.80.255.254" {
		t.Errorf("last pod IP = %s; want 127.80.255.254", a)
	}
}

func TestPodIPsCollision(t *testing.T) {
	var ips podIPs
	a, err := ips.Take("pod-a")
	if err != nil {
		t.Fatal(err)
	}
	if a != derivedIP("pod-a") {
		t.Errorf("first pod got %s; want its derived %s", a, derivedIP("pod-a"))
	}
	// a second pod hashing to the same address moves to the next one
	ips.used[derivedIP("pod-b")] = "squatter"
	ips.byUID["squatter"] = derivedIP("pod-b")
	b, err := ips.Take("pod-b")
	if err != nil {
		t.Fatal(err)
	}
	if b == derivedIP("pod-b") || podIPIndex(b) != (podIPIndex(derivedIP("pod-b"))+1)%podIPCount {
		t.Errorf("colliding pod got %s; want the address after %s", b, derivedIP("pod-b"))
	}
	// stable per UID, even after the squatter leaves
	ips.Release("squatter")
	if again, _ := ips.Take("pod-b"); again != b {
		t.Errorf("Take(pod-b) again = %s; want %s", again, b)
	}
	ips.Release("pod-b")
	if again, _ := ips.Take("pod-b"); again != derivedIP("pod-b") {
		t.Errorf("after Release, Take(pod-b) = %s; want %s", again, derivedIP("pod-b"))
	}
}

func TestPodIPsExhausted(t *testing.T) {
	var ips podIPs
	if _, err := ips.Take("first"); err != nil {
		t.Fatal(err)
	}
	for n := range podIPCount {
		if a := nthPodIP(n); ips.used[a] == "" {
			ips.used[a] = fmt.Sprint(n)
			ips.byUID[fmt.Sprint(n)] = a
		}
	}
	if _, err := ips.Take("one-too-many"); err != errNoPodIP {
		t.Errorf("Take on a full range: %v; want %v", err, errNoPodIP)
	}
	ips.Release("7")
	if a, err := ips.Take("one-too-many"); err != nil || a != nthPodIP(7) {
		t.Errorf("Take after a Release = %s, %v; want %s", a, err, nthPodIP(7))
	}
}
