package kubeletstream

import (
	"errors"
	"fmt"
	"sync"
)

// errTooMany is the refusal of a session or a stream beyond a bound.
var errTooMany = errors.New("too many")

// caps are the bounds of one pool: what it counts (for messages), and how
// many at once on a pod, a namespace and the node.
type caps struct {
	what                 string
	pod, namespace, node int
}

// pool counts what is held at once on the node, per namespace and per pod.
// The zero value is empty.
type pool struct {
	mu         sync.Mutex
	node       int
	namespaces map[string]int
	pods       map[string]int
}

// acquire takes one place for pod of namespace, or refuses it (errTooMany,
// naming the bound) when a bound is reached; release gives it back, once.
func (p *pool) acquire(c caps, namespace, pod string) (release func(), err error) {
	key := namespace + "/" + pod
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.node >= c.node:
		return nil, fmt.Errorf("%w %s on this node (at most %d at once)", errTooMany, c.what, c.node)
	case p.namespaces[namespace] >= c.namespace:
		return nil, fmt.Errorf("%w %s in namespace %s (its share of this node: %d at once)", errTooMany, c.what, namespace, c.namespace)
	case p.pods[key] >= c.pod:
		return nil, fmt.Errorf("%w %s on pod %s (at most %d at once)", errTooMany, c.what, key, c.pod)
	}
	if p.pods == nil {
		p.pods, p.namespaces = map[string]int{}, map[string]int{}
	}
	p.node++
	p.namespaces[namespace]++
	p.pods[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.node--
			decrement(p.namespaces, namespace)
			decrement(p.pods, key)
		})
	}, nil
}

// decrement takes one from m[k], dropping the key at zero.
func decrement(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// held is how many places are taken on the node.
func (p *pool) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.node
}
