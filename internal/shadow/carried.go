package shadow

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// Carried is what the tunnels of a shadow carry, as Build wrote them in
// its Deployment: what the gateway lets the shadow ask for (SPEC S14).
type Carried struct {
	// ForwardPorts are the pod's ports the forward tunnel serves.
	ForwardPorts []int32
	// ReversePorts are the ports the job connects to for the reverse
	// tunnel's forwards (each names a socket rev-PORT.sock).
	ReversePorts []int32
	// SocksPort is the reverse tunnel's SOCKS proxy port, 0 for none.
	SocksPort int32
	// Relayed: the pod's job runs the relay (RunsRelay), whose forward
	// entry is the only way to its ports. A Deployment with reverse
	// forwards is relayed whether or not it is marked (AnnotationRelayed):
	// one an earlier sluice made is not.
	Relayed bool
}

// CarriedBy reads what d, a shadow Deployment Build made, carries: the
// forward container's ports and the reverse container's --forward and
// --socks-port arguments. It returns an error for a Deployment Build would
// not have made.
func CarriedBy(d *appsv1.Deployment) (Carried, error) {
	var c Carried
	for _, ctr := range d.Spec.Template.Spec.Containers {
		switch ctr.Name {
		case ContainerForward:
			for _, p := range ctr.Ports {
				if p.ContainerPort < 1 || p.ContainerPort > 65535 {
					return Carried{}, fmt.Errorf("shadow: deployment %s/%s: forward port %d out of range", d.Namespace, d.Name, p.ContainerPort)
				}
				c.ForwardPorts = append(c.ForwardPorts, p.ContainerPort)
			}
		case ContainerReverse:
			for _, arg := range ctr.Args {
				if err := c.reverseArg(arg); err != nil {
					return Carried{}, fmt.Errorf("shadow: deployment %s/%s: %w", d.Namespace, d.Name, err)
				}
			}
		}
	}
	c.Relayed = len(c.ReversePorts) > 0 || d.Spec.Template.Annotations[AnnotationRelayed] == "true"
	return c, nil
}

// reverseArg takes what arg, an argument of the reverse container, says of
// the ports the job may connect to.
func (c *Carried) reverseArg(arg string) error {
	if v, ok := strings.CutPrefix(arg, "--forward="); ok {
		port, _, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("reverse forward %q: want PORT=DESTINATION", v)
		}
		p, err := parsePort(port)
		if err != nil {
			return fmt.Errorf("reverse forward %q: %w", v, err)
		}
		c.ReversePorts = append(c.ReversePorts, p)
		return nil
	}
	if v, ok := strings.CutPrefix(arg, "--socks-port="); ok {
		p, err := parsePort(v)
		if err != nil {
			return fmt.Errorf("SOCKS port: %w", err)
		}
		c.SocksPort = p
	}
	return nil
}

func parsePort(s string) (int32, error) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return int32(p), nil
}
