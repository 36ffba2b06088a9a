package annotations

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseSocksPort(t *testing.T) {
	tests := []struct {
		value  string
		port   int
		ok     bool
		reason string // rule in the refusal, "" when accepted
	}{
		{"", 0, false, ""},
		{"  ", 0, false, ""},
		{"1080", 1080, true, ""},
		{" 1080\n", 1080, true, ""},
		{"65535", 65535, true, ""},
		{"0", 0, false, `value "0": port must be 1-65535`},
		{"65536", 0, false, "port must be 1-65535"},
		{"+1080", 0, false, "port must be a decimal number"},
		{"-1", 0, false, "port must be a decimal number"},
		{"01080", 0, false, "port must not have leading zeros"},
		{"1080 1081", 0, false, "port must be a decimal number"},
		{"true", 0, false, "port must be a decimal number"},
	}
	for _, tt := range tests {
		port, ok, err := ParseSocksPort(tt.value)
		if tt.reason == "" {
			if err != nil || port != tt.port || ok != tt.ok {
				t.Errorf("ParseSocksPort(%q): got %d, %v, %v; want %d, %v, nil", tt.value, port, ok, err, tt.port, tt.ok)
			}
			continue
		}
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != ReasonMalformed || r.Annotation != ReverseSocksPort || !strings.Contains(r.Rule, tt.reason) || ok || port != 0 {
			t.Errorf("ParseSocksPort(%q): got %d, %v, %v; want a refusal containing %q", tt.value, port, ok, err, tt.reason)
		}
	}
}

func TestParse(t *testing.T) {
	// A pod that sets no ReverseBind leaves the address to sluice: the
	// zero Addr, which the job side derives from the pod's salt.
	var derived netip.Addr
	tests := []struct {
		name string
		ann  map[string]string
		want *Reverse
	}{
		{"no annotations", nil, nil},
		{"unrelated", map[string]string{"slurm-job.vk.io/flags": "--qos=x", PodVPN: "true"}, nil},
		{"empty forwards", map[string]string{ReverseForwards: " , "}, nil},
		{"bind alone asks for nothing", map[string]string{ReverseBind: "127.1.0.9"}, nil},
		{"retired alone", map[string]string{RetiredReverseOwnerOnly: "false", RetiredReverseNodeExec: "srun"}, nil},
		{"seed example", map[string]string{ReverseForwards: "minio:9000 redis:6379 kubernetes.default.svc.cluster.local:443"}, &Reverse{
			Forwards: []Forward{
				{ListenPort: 9000, Host: "minio", Port: 9000, Dial: "minio.team-a:9000"},
				{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"},
				{ListenPort: 443, Host: "kubernetes.default.svc.cluster.local", Port: 443, Dial: "kubernetes.default.svc.cluster.local:443"},
			},
			Bind: derived,
		}},
		{"bind override", map[string]string{ReverseForwards: "redis:6379", ReverseBind: "::ffff:127.1.0.5"}, &Reverse{
			Forwards: []Forward{{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"}},
			Bind:     netip.MustParseAddr("127.1.0.5"),
		}},
		{"socks alone", map[string]string{ReverseSocksPort: "1080"}, &Reverse{Bind: derived, SocksPort: 1080}},
		{"socks and forwards", map[string]string{ReverseForwards: "redis:6379", ReverseSocksPort: "1080"}, &Reverse{
			Forwards:  []Forward{{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"}},
			Bind:      derived,
			SocksPort: 1080,
		}},
		{"retired ignored", map[string]string{ReverseForwards: "redis:6379", RetiredReverseOwnerOnly: "false", RetiredReverseNodeExec: "bogus value"}, &Reverse{
			Forwards: []Forward{{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"}},
			Bind:     derived,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.ann, "team-a")
			if err != nil {
				t.Fatalf("got error %v; want none", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want string
		why  Reason
	}{
		{"malformed entry", map[string]string{ReverseForwards: "redis:99999"},
			`interlink.eu/reverse-forwards: entry "redis:99999": port must be 1-65535`, ReasonMalformed},
		{"repeat", map[string]string{ReverseForwards: "redis:6379 6379:other:1"},
			`interlink.eu/reverse-forwards: entry "6379:other:1": port 6379 repeats`, ReasonPortRepeats},
		{"socks collides", map[string]string{ReverseForwards: "minio:9000 redis:6379", ReverseSocksPort: "6379"},
			`interlink.eu/reverse-socks-port: port 6379 is also a listen port of interlink.eu/reverse-forwards`, ReasonSocksCollides},
		{"socks collides with listen port", map[string]string{ReverseForwards: "1080:minio:9000", ReverseSocksPort: "1080"},
			`interlink.eu/reverse-socks-port: port 1080 is also a listen port of interlink.eu/reverse-forwards`, ReasonSocksCollides},
		{"socks malformed", map[string]string{ReverseForwards: "redis:6379", ReverseSocksPort: "yes"},
			`interlink.eu/reverse-socks-port: value "yes": port must be a decimal number`, ReasonMalformed},
		{"bad bind", map[string]string{ReverseForwards: "redis:6379", ReverseBind: "::ffff:127.0.0.1"},
			`interlink.eu/reverse-bind: value "::ffff:127.0.0.1" is 127.0.0.1, shared by every user of the node: want an address in 127.1.0.0-127.255.255.254`, ReasonBadBind},
		{"bad bind alone", map[string]string{ReverseBind: "10.0.0.1"},
			`interlink.eu/reverse-bind: value "10.0.0.1" is not a loopback address: want an address in 127.1.0.0-127.255.255.254`, ReasonBadBind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.ann, "team-a")
			var r *Refusal
			if got != nil || !errors.As(err, &r) || r.Reason != tt.why || err.Error() != tt.want {
				t.Errorf("got %+v, %v; want nil and %s: %s", got, err, tt.why, tt.want)
			}
		})
	}
}

func TestParseCallerMistakes(t *testing.T) {
	ann := map[string]string{ReverseForwards: "redis:6379"}
	for _, ns := range []string{"", "Team_A"} {
		r, err := Parse(ann, ns)
		var ref *Refusal
		if r != nil || err == nil || errors.As(err, &ref) {
			t.Errorf("Parse(namespace %q): got %+v, %v; want nil and a plain error", ns, r, err)
		}
	}
	if r, err := Parse(map[string]string{ReverseBind: "127.1.0.9"}, ""); r != nil || err != nil {
		t.Errorf("Parse of a bind alone: got %+v, %v; want nil, nil", r, err)
	}
}
