package annotations

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseForwardsAccepts(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) // 253
	tests := []struct {
		name, value string
		want        []Forward
	}{
		{"seed example", "minio:9000 redis:6379 kubernetes.default.svc.cluster.local:443", []Forward{
			{ListenPort: 9000, Host: "minio", Port: 9000, Dial: "minio.team-a:9000"},
			{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"},
			{ListenPort: 443, Host: "kubernetes.default.svc.cluster.local", Port: 443, Dial: "kubernetes.default.svc.cluster.local:443"},
		}},
		{"empty", "", nil},
		{"separators only", " ,\t,\n ", nil},
		{"commas", "minio:9000,redis:6379", []Forward{
			{ListenPort: 9000, Host: "minio", Port: 9000, Dial: "minio.team-a:9000"},
			{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"},
		}},
		{"mixed and repeated separators", " ,minio:9000 ,, \n\tredis:6379, ", []Forward{
			{ListenPort: 9000, Host: "minio", Port: 9000, Dial: "minio.team-a:9000"},
			{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"},
		}},
		{"listen port", "16379:redis:6379", []Forward{{ListenPort: 16379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"}}},
		{"same destination twice", "9000:minio:9000 9001:minio:9000", []Forward{
			{ListenPort: 9000, Host: "minio", Port: 9000, Dial: "minio.team-a:9000"},
			{ListenPort: 9001, Host: "minio", Port: 9000, Dial: "minio.team-a:9000"},
		}},
		{"underscore in a qualified name", "gpu_01.cluster.example.org:8080", []Forward{{ListenPort: 8080, Host: "gpu_01.cluster.example.org", Port: 8080, Dial: "gpu_01.cluster.example.org:8080"}}},
		{"namespaced service", "minio.storage:9000", []Forward{{ListenPort: 9000, Host: "minio.storage", Port: 9000, Dial: "minio.storage:9000"}}},
		{"upper case kept", "MinIO:9000 DB.Example.ORG:5432", []Forward{
			{ListenPort: 9000, Host: "MinIO", Port: 9000, Dial: "MinIO.team-a:9000"},
			{ListenPort: 5432, Host: "DB.Example.ORG", Port: 5432, Dial: "DB.Example.ORG:5432"},
		}},
		{"localhost kept", "localhost:8080 LocalHost:8081", []Forward{
			{ListenPort: 8080, Host: "localhost", Port: 8080, Dial: "localhost:8080"},
			{ListenPort: 8081, Host: "LocalHost", Port: 8081, Dial: "LocalHost:8081"},
		}},
		{"digits and hyphens", "s3-cache:80 1and1.example:81", []Forward{
			{ListenPort: 80, Host: "s3-cache", Port: 80, Dial: "s3-cache.team-a:80"},
			{ListenPort: 81, Host: "1and1.example", Port: 81, Dial: "1and1.example:81"},
		}},
		{"ipv4", "10.96.0.1:443 2222:192.168.1.5:22", []Forward{
			{ListenPort: 443, Host: "10.96.0.1", Port: 443, Dial: "10.96.0.1:443"},
			{ListenPort: 2222, Host: "192.168.1.5", Port: 22, Dial: "192.168.1.5:22"},
		}},
		{"ipv6", "[fd00::1]:443 8443:[::1]:443", []Forward{
			{ListenPort: 443, Host: "fd00::1", Port: 443, Dial: "[fd00::1]:443"},
			{ListenPort: 8443, Host: "::1", Port: 443, Dial: "[::1]:443"},
		}},
		{"v4-mapped ipv6", "[::ffff:10.0.0.1]:80", []Forward{{ListenPort: 80, Host: "::ffff:10.0.0.1", Port: 80, Dial: "[::ffff:10.0.0.1]:80"}}},
		{"port bounds", "a:1 b:65535", []Forward{
			{ListenPort: 1, Host: "a", Port: 1, Dial: "a.team-a:1"},
			{ListenPort: 65535, Host: "b", Port: 65535, Dial: "b.team-a:65535"},
		}},
		{"253 characters", long + ":1", []Forward{{ListenPort: 1, Host: long, Port: 1, Dial: long + ":1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseForwards(tt.value, "team-a")
			if err != nil {
				t.Fatalf("ParseForwards(%q): got error %v; want none", tt.value, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseForwards(%q):\ngot  %+v\nwant %+v", tt.value, got, tt.want)
			}
		})
	}
}

func TestParseForwardsRefuses(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 62) // 254
	tests := []struct {
		name, value string
		reason      Reason
		entry, rule string
	}{
		{"port too big", "redis:99999", ReasonMalformed, "redis:99999", "port must be 1-65535"},
		{"port zero", "redis:0", ReasonMalformed, "redis:0", "port must be 1-65535"},
		{"port 65536", "redis:65536", ReasonMalformed, "redis:65536", "port must be 1-65535"},
		{"port huge", "redis:99999999999999999999", ReasonMalformed, "redis:99999999999999999999", "port must be 1-65535"},
		{"port plus", "redis:+6379", ReasonMalformed, "redis:+6379", "port must be a decimal number"},
		{"port minus", "redis:-1", ReasonMalformed, "redis:-1", "port must be a decimal number"},
		{"port name", "redis:http", ReasonMalformed, "redis:http", "port must be a decimal number"},
		{"port leading zero", "redis:06379", ReasonMalformed, "redis:06379", "port must not have leading zeros"},
		{"port double zero", "redis:00", ReasonMalformed, "redis:00", "port must not have leading zeros"},
		{"port empty", "redis:", ReasonMalformed, "redis:", "port is empty"},
		{"listen port zero", "0:redis:6379", ReasonMalformed, "0:redis:6379", "listen port must be 1-65535"},
		{"listen port empty", ":redis:6379", ReasonMalformed, ":redis:6379", "listen port is empty"},
		{"listen port sign", "+1:redis:6379", ReasonMalformed, "+1:redis:6379", "listen port must be a decimal number"},
		{"no port", "redis", ReasonMalformed, "redis", "want host:port or listenport:host:port"},
		{"too many parts", "1:2:redis:6379", ReasonMalformed, "1:2:redis:6379", "want host:port or listenport:host:port; IPv6 addresses go in brackets: [fd00::1]:443"},
		{"bare ipv6", "fd00::1:443", ReasonMalformed, "fd00::1:443", "want host:port or listenport:host:port; IPv6 addresses go in brackets: [fd00::1]:443"},
		{"bare ipv6 loopback", "::1", ReasonMalformed, "::1", "want host:port or listenport:host:port; IPv6 addresses go in brackets: [fd00::1]:443"},
		{"empty host", ":6379", ReasonMalformed, ":6379", "host is empty"},
		{"trailing dot", "kubernetes.default.svc.:443", ReasonMalformed, "kubernetes.default.svc.:443", "host must not end with a dot"},
		{"empty label", "a..b:1", ReasonMalformed, "a..b:1", "host: empty label (a leading, trailing or double dot)"},
		{"leading dot", ".a:1", ReasonMalformed, ".a:1", "host: empty label (a leading, trailing or double dot)"},
		{"label too long", strings.Repeat("x", 64) + ":1", ReasonMalformed, strings.Repeat("x", 64) + ":1", "host: a label is longer than 63 characters"},
		{"hyphen start", "-redis:1", ReasonMalformed, "-redis:1", "host: a label must start with a letter or a digit"},
		{"hyphen end", "redis-.x:1", ReasonMalformed, "redis-.x:1", "host: a label must not end with '-'"},
		{"underscore", "my_svc:1", ReasonMalformed, "my_svc:1", "host: a name without a dot is a Service of the pod's namespace, and Service names hold no '_'"},
		{"shell", "$(id):1", ReasonMalformed, "$(id):1", "host: only letters, digits, '-', '_' and dots are allowed"},
		{"semicolon", "a;b:1", ReasonMalformed, "a;b:1", "host: only letters, digits, '-', '_' and dots are allowed"},
		{"non-ascii", "minió:9000", ReasonMalformed, "minió:9000", "host: only letters, digits, '-', '_' and dots are allowed"},
		{"nbsp", "minio\u00a0x:9000", ReasonMalformed, "minio\u00a0x:9000", "host: only letters, digits, '-', '_' and dots are allowed"},
		{"numeric name", "123:1", ReasonMalformed, "123:1", "host: the last label must start with a letter (else the name reads as an IP address)"},
		{"hex name", "0x7f:1", ReasonMalformed, "0x7f:1", "host: the last label must start with a letter (else the name reads as an IP address)"},
		{"short ipv4", "10.1:1", ReasonMalformed, "10.1:1", "host: the last label must start with a letter (else the name reads as an IP address)"},
		{"ipv4 leading zero", "10.0.0.01:1", ReasonMalformed, "10.0.0.01:1", "host: the last label must start with a letter (else the name reads as an IP address)"},
		{"ipv4 out of range", "10.0.0.256:1", ReasonMalformed, "10.0.0.256:1", "host: the last label must start with a letter (else the name reads as an IP address)"},
		{"too long", long + ":1", ReasonMalformed, long + ":1", "host: longer than 253 characters"},
		{"unspecified", "0.0.0.0:1", ReasonMalformed, "0.0.0.0:1", "host must not be the unspecified address"},
		{"unspecified v6", "[::]:1", ReasonMalformed, "[::]:1", "host must not be the unspecified address"},
		{"multicast", "224.0.0.1:1", ReasonMalformed, "224.0.0.1:1", "host must be a unicast address"},
		{"broadcast", "255.255.255.255:1", ReasonMalformed, "255.255.255.255:1", "host must be a unicast address"},
		{"zone", "[fe80::1%eth0]:1", ReasonMalformed, "[fe80::1%eth0]:1", "IPv6 address must not have a zone"},
		{"ipv4 in brackets", "[10.0.0.1]:1", ReasonMalformed, "[10.0.0.1]:1", "brackets must hold an IPv6 address"},
		{"name in brackets", "[redis]:1", ReasonMalformed, "[redis]:1", "brackets must hold an IPv6 address"},
		{"unclosed bracket", "[fd00::1:443", ReasonMalformed, "[fd00::1:443", "want host:port or listenport:host:port (IPv6 in brackets)"},
		{"bracket without port", "[fd00::1]", ReasonMalformed, "[fd00::1]", "want host:port or listenport:host:port (IPv6 in brackets)"},
		{"bracket no colon", "8443[::1]:443", ReasonMalformed, "8443[::1]:443", "want host:port or listenport:host:port (IPv6 in brackets)"},
		{"bracket trailing", "[::1]:443]", ReasonMalformed, "[::1]:443]", "port must be a decimal number"},
		{"stray bracket", "redis]:1", ReasonMalformed, "redis]:1", "host: only letters, digits, '-', '_' and dots are allowed"},
		{"repeated entry", "redis:6379 redis:6379", ReasonPortRepeats, "redis:6379", "port 6379 repeats"},
		{"repeated listen port", "minio:9000 9000:other:80", ReasonPortRepeats, "9000:other:80", "port 9000 repeats"},
		{"second entry bad", "minio:9000 redis:99999", ReasonMalformed, "redis:99999", "port must be 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseForwards(tt.value, "team-a")
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("ParseForwards(%q): got %+v, error %v; want a *Refusal", tt.value, got, err)
			}
			want := Refusal{Reason: tt.reason, Annotation: ReverseForwards, Entry: truncate(tt.entry), Rule: tt.rule}
			if *r != want {
				t.Errorf("ParseForwards(%q):\ngot  %+v\nwant %+v", tt.value, *r, want)
			}
		})
	}
}

func TestParseForwardsMessage(t *testing.T) {
	_, err := ParseForwards("minio:9000 redis:99999", "team-a")
	want := `interlink.eu/reverse-forwards: entry "redis:99999": port must be 1-65535`
	if err == nil || err.Error() != want {
		t.Errorf("got %v; want %s", err, want)
	}
	_, err = ParseForwards("redis:6379,redis:6379", "team-a")
	want = `interlink.eu/reverse-forwards: entry "redis:6379": port 6379 repeats`
	if err == nil || err.Error() != want {
		t.Errorf("got %v; want %s", err, want)
	}
	huge := strings.Repeat("x", 100000) + ":1"
	_, err = ParseForwards(huge, "team-a")
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("got a message of %d bytes for a huge entry; want one of at most 200", len(err.Error()))
	}
}

func TestParseForwardsNamespace(t *testing.T) {
	for _, ns := range []string{"", "Team-A", "a.b", "a b", strings.Repeat("n", 64)} {
		_, err := ParseForwards("minio:9000", ns)
		var r *Refusal
		if err == nil || errors.As(err, &r) {
			t.Errorf("ParseForwards with namespace %q: got %v; want a plain error", ns, err)
		}
	}
	if got, err := ParseForwards(" ", ""); err != nil || got != nil {
		t.Errorf("ParseForwards of no entries with no namespace: got %v, %v; want nil, nil", got, err)
	}
}

// TestForwardRoundTrip checks that String gives back an entry that parses to
// the same Forward.
func TestForwardRoundTrip(t *testing.T) {
	value := "minio:9000 16379:redis:6379 kubernetes.default.svc.cluster.local:443 [fd00::1]:8443 10.0.0.1:5432 8080:[::ffff:10.1.2.3]:80 localhost:1"
	fs, err := ParseForwards(value, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]string, len(fs))
	for i, f := range fs {
		entries[i] = f.String()
	}
	again, err := ParseForwards(strings.Join(entries, ","), "team-a")
	if err != nil {
		t.Fatalf("reparse %q: %v", entries, err)
	}
	if !reflect.DeepEqual(again, fs) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", again, fs)
	}
	if got, want := fs[3].String(), "8443:[fd00::1]:8443"; got != want {
		t.Errorf("String: got %q; want %q", got, want)
	}
}

func TestForwardIsIP(t *testing.T) {
	fs, err := ParseForwards("minio:1 10.0.0.1:2 [fd00::1]:3 a.b:4", "ns")
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, true, false}
	for i, f := range fs {
		if f.IsIP() != want[i] {
			t.Errorf("%s: IsIP got %v; want %v", f, f.IsIP(), want[i])
		}
	}
}

// TestParseForwardsShellChars checks that no character with a meaning to a
// shell gets into an entry, wherever it stands.
func TestParseForwardsShellChars(t *testing.T) {
	for _, c := range "$`'\"\\|&;<>(){}*?~!#%^=+/@\x00\x7f\u00a0\u2028" {
		for _, e := range []string{"a" + string(c) + "b:1", string(c) + "a:1", "a:1" + string(c), "1" + string(c) + ":a:1", "[::1" + string(c) + "]:1"} {
			if got, err := ParseForwards(e, "ns"); err == nil {
				t.Errorf("ParseForwards(%q): got %+v; want a refusal", e, got)
			}
		}
	}
}
