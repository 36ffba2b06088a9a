package annotations

import (
	"errors"
	"testing"
)

var allowAll = SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true, AllowSocks: true}

func TestCheck(t *testing.T) {
	noSocks := allowAll
	noSocks.AllowSocks = false
	tests := []struct {
		name string
		ann  map[string]string
		site SiteRules
		why  Reason // "" when allowed
		msg  string
	}{
		{"forwards allowed", map[string]string{ReverseForwards: "redis:6379"}, noSocks, "", ""},
		{"socks allowed", map[string]string{ReverseForwards: "redis:6379", ReverseSocksPort: "1080"}, allowAll, "", ""},
		{"nothing asked, nothing allowed", map[string]string{PodVPN: "true", RetiredReverseNodeExec: "srun"}, SiteRules{}, "", ""},
		{"retired ignored", map[string]string{ReverseForwards: "redis:6379", RetiredReverseOwnerOnly: "false", RetiredReverseNodeExec: "srun"}, noSocks, "", ""},
		{"pod-vpn empty value", map[string]string{ReverseForwards: "redis:6379", PodVPN: ""}, noSocks, "", ""},

		{"reverse not enabled", map[string]string{ReverseForwards: "redis:6379"}, SiteRules{ShadowModeSSH: true, TunnelEnabled: true, AllowSocks: true}, ReasonNotEnabled,
			"interlink.eu/reverse-forwards: the reverse tunnel is not enabled on this node (Network.SSH.Reverse.Enabled)"},
		{"socks only, reverse not enabled", map[string]string{ReverseSocksPort: "1080"}, SiteRules{ShadowModeSSH: true, TunnelEnabled: true, AllowSocks: true}, ReasonNotEnabled,
			"interlink.eu/reverse-socks-port: the reverse tunnel is not enabled on this node (Network.SSH.Reverse.Enabled)"},
		{"shadow mode", map[string]string{ReverseForwards: "redis:6379"}, SiteRules{ReverseEnabled: true, TunnelEnabled: true}, ReasonShadowMode,
			"interlink.eu/reverse-forwards: the reverse tunnel needs Network.ShadowMode ssh on this node"},
		{"tunnel disabled", map[string]string{ReverseForwards: "redis:6379"}, SiteRules{ReverseEnabled: true, ShadowModeSSH: true}, ReasonTunnelDisabled,
			"interlink.eu/reverse-forwards: the tunnel is disabled on this node (Network.EnableTunnel)"},
		{"site before pod", map[string]string{ReverseForwards: "redis:6379", PodVPN: "true", ReverseSocksPort: "1080"}, SiteRules{}, ReasonNotEnabled, ""},
		{"pod-vpn", map[string]string{ReverseForwards: "redis:6379", PodVPN: "true"}, allowAll, ReasonPodVPN,
			"interlink.eu/pod-vpn: any non-empty value disables the shadow, which carries the reverse tunnel asked for in interlink.eu/reverse-forwards"},
		{"pod-vpn false counts", map[string]string{ReverseForwards: "redis:6379", PodVPN: "false"}, allowAll, ReasonPodVPN, ""},
		{"pod-vpn with socks only", map[string]string{ReverseSocksPort: "1080", PodVPN: "1"}, allowAll, ReasonPodVPN,
			"interlink.eu/pod-vpn: any non-empty value disables the shadow, which carries the reverse tunnel asked for in interlink.eu/reverse-socks-port"},
		{"socks not allowed", map[string]string{ReverseForwards: "redis:6379", ReverseSocksPort: "1080"}, noSocks, ReasonSocksNotAllowed,
			"interlink.eu/reverse-socks-port: a SOCKS proxy is not allowed on this node (Network.SSH.Reverse.AllowSocks)"},
		{"socks only not allowed", map[string]string{ReverseSocksPort: "1080"}, noSocks, ReasonSocksNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.ann, "team-a")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = Check(r, tt.ann, tt.site)
			if tt.why == "" {
				if err != nil {
					t.Errorf("got %v; want no refusal", err)
				}
				return
			}
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Reason != tt.why {
				t.Fatalf("got %v; want a %s refusal", err, tt.why)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("got %q; want %q", err, tt.msg)
			}
		})
	}
}

// TestCheckByHand checks that a Reverse not made by Parse is held to the
// rules that tie the annotations together.
func TestCheckByHand(t *testing.T) {
	f := Forward{ListenPort: 6379, Host: "redis", Port: 6379, Dial: "redis.team-a:6379"}
	tests := []struct {
		r   *Reverse
		why Reason
	}{
		{&Reverse{Forwards: []Forward{f, f}}, ReasonPortRepeats},
		{&Reverse{Forwards: []Forward{f}, SocksPort: 6379}, ReasonSocksCollides},
	}
	for _, tt := range tests {
		err := Check(tt.r, nil, allowAll)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Reason != tt.why {
			t.Errorf("Check(%+v): got %v; want a %s refusal", tt.r, err, tt.why)
		}
	}
	if err := Check(nil, map[string]string{PodVPN: "x"}, SiteRules{}); err != nil {
		t.Errorf("Check(nil): got %v; want nil", err)
	}
}

func TestHasPodVPN(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "false": true, "0": true, " ": true} {
		if got := HasPodVPN(map[string]string{PodVPN: v}); got != want {
			t.Errorf("HasPodVPN(%q): got %v; want %v", v, got, want)
		}
	}
	if HasPodVPN(nil) {
		t.Errorf("HasPodVPN(nil): got true; want false")
	}
}
