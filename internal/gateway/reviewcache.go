package gateway

import (
	"container/list"
	"sync"
	"time"
)

// reviewCache keeps the latest reviews of tokens, keyed by the token's
// SHA-256 (the tokens themselves are not kept): at most size of them, the
// least recently used going first, each until its deadline.
type reviewCache struct {
	size              int
	accept, refuseTTL time.Duration

	mu    sync.Mutex
	order *list.List // of *cached, most recently used first
	byKey map[[32]byte]*list.Element
}

type cached struct {
	key      [32]byte
	review   review
	deadline time.Time
}

func newReviewCache(size int, accept, refuse time.Duration) *reviewCache {
	return &reviewCache{size: size, accept: accept, refuseTTL: refuse, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// get returns the review kept for key, if it is still good at now.
func (c *reviewCache) get(key [32]byte, now time.Time) (review, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return review{}, false
	}
	v := e.Value.(*cached)
	if !now.Before(v.deadline) {
		c.order.Remove(e)
		delete(c.byKey, key)
		return review{}, false
	}
	c.order.MoveToFront(e)
	return v.review, true
}

// put keeps r for key from now, for the TTL of its kind but not past
// expiry (zero when the token's expiry is unknown: an accepted review of
// such a token is not kept).
func (c *reviewCache) put(key [32]byte, r review, now, expiry time.Time) {
	ttl := c.accept
	if r.refused != "" {
		ttl = c.refuseTTL
	}
	deadline := now.Add(ttl)
	if r.refused == "" {
		if expiry.IsZero() {
			return
		}
		if expiry.Before(deadline) {
			deadline = expiry
		}
	}
	if !now.Before(deadline) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		e.Value = &cached{key: key, review: r, deadline: deadline}
		c.order.MoveToFront(e)
		return
	}
	c.byKey[key] = c.order.PushFront(&cached{key: key, review: r, deadline: deadline})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cached).key)
	}
}
