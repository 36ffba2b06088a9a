package tunnel

import "testing"

func TestSocksNotAllowed(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.9.8.7": true, "::1": true, "::ffff:127.0.0.1": true, "0.0.0.0": true, "::": true,
		"localhost": true, "LOCALHOST.": true, "db.localhost": true,
		"redis.default": false, "10.96.0.1": false, "fd00::1": false, "kubernetes.default.svc.cluster.local": false, "localhost-db": false,
	} {
		if got := notAllowed(host); got != want {
			t.Errorf("notAllowed(%q) = %t; want %t", host, got, want)
		}
	}
}
