package annotations

// SiteRules is the part of the virtual kubelet's configuration that decides
// whether a pod's reverse tunnel can be honoured.
type SiteRules struct {
	// ReverseEnabled is Network.SSH.Reverse.Enabled.
	ReverseEnabled bool
	// ShadowModeSSH is true when Network.ShadowMode is ssh.
	ShadowModeSSH bool
	// TunnelEnabled is Network.EnableTunnel.
	TunnelEnabled bool
	// AllowSocks is Network.SSH.Reverse.AllowSocks.
	AllowSocks bool
}

// Check tells whether the site can honour r, the result of Parse for a pod
// with these annotations, and returns a *Refusal when it cannot (S6). A nil
// r asks for nothing and passes, whatever the site and the other
// annotations (interlink.eu/pod-vpn and the retired ones included).
//
// The site's own rules come first, in this order: Reverse.Enabled,
// ShadowMode, EnableTunnel; then the pod's conflicts: pod-vpn, then SOCKS
// without AllowSocks. Only the first broken rule is reported. Check also
// re-checks r's repeated ports and SOCKS collision, for an r not made by
// Parse.
func Check(r *Reverse, annotations map[string]string, site SiteRules) error {
	if r == nil {
		return nil
	}
	if err := r.validate(); err != nil {
		return err
	}
	asking := ReverseForwards
	if len(r.Forwards) == 0 {
		asking = ReverseSocksPort
	}
	switch {
	case !site.ReverseEnabled:
		return refuse(ReasonNotEnabled, asking,
			"the reverse tunnel is not enabled on this node (Network.SSH.Reverse.Enabled)")
	case !site.ShadowModeSSH:
		return refuse(ReasonShadowMode, asking,
			"the reverse tunnel needs Network.ShadowMode ssh on this node")
	case !site.TunnelEnabled:
		return refuse(ReasonTunnelDisabled, asking,
			"the tunnel is disabled on this node (Network.EnableTunnel)")
	case HasPodVPN(annotations):
		return refuse(ReasonPodVPN, PodVPN,
			"any non-empty value disables the shadow, which carries the reverse tunnel asked for in %s", asking)
	case r.SocksPort != 0 && !site.AllowSocks:
		return refuse(ReasonSocksNotAllowed, ReverseSocksPort,
			"a SOCKS proxy is not allowed on this node (Network.SSH.Reverse.AllowSocks)")
	}
	return nil
}
