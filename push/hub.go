package push

import "sync"

// Subscriber receives frames. Send must not block: it queues the frame and
// reports false when the subscriber's queue is full (the subscriber then
// deals with being slow; the broadcaster moves on).
type Subscriber interface {
	Send(frame []byte) bool
}

// Hub fans frames out to the subscribers of a target ("match:<id>",
// "odds:<id>"). Broadcast never blocks on a subscriber, so a slow client
// never delays the others.
type Hub struct {
	mu      sync.RWMutex
	targets map[string]map[Subscriber]struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{targets: map[string]map[Subscriber]struct{}{}} }

// Add subscribes s to target; false when it already was.
func (h *Hub) Add(target string, s Subscriber) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.targets[target]
	if set == nil {
		set = map[Subscriber]struct{}{}
		h.targets[target] = set
	}
	if _, ok := set[s]; ok {
		return false
	}
	set[s] = struct{}{}
	return true
}

// Remove unsubscribes s from target; false when it was not subscribed.
func (h *Hub) Remove(target string, s Subscriber) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.targets[target]
	if _, ok := set[s]; !ok {
		return false
	}
	delete(set, s)
	if len(set) == 0 {
		delete(h.targets, target)
	}
	return true
}

// RemoveAll unsubscribes s from every target listed.
func (h *Hub) RemoveAll(s Subscriber, targets []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range targets {
		if set := h.targets[t]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(h.targets, t)
			}
		}
	}
}

// Targets lists the targets that have subscribers.
func (h *Hub) Targets() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.targets))
	for t := range h.targets {
		out = append(out, t)
	}
	return out
}

// Has reports whether target has any subscriber.
func (h *Hub) Has(target string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.targets[target]) > 0
}

// Broadcast queues frame (a whole WebSocket frame: Frame) on every
// subscriber of target and returns how many accepted it. The frame is
// shared: subscribers must not modify it.
func (h *Hub) Broadcast(target string, frame []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for s := range h.targets[target] {
		if s.Send(frame) {
			n++
		}
	}
	return n
}
