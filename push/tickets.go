package push

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ticket is what a WebSocket ticket stands for: the key that minted it.
type Ticket struct {
	KeyID     string    `json:"key_id"`
	AccountID string    `json:"account_id"`
	Plan      string    `json:"plan"`
	ExpiresAt time.Time `json:"expires_at"`
}

// TicketStore keeps minted tickets until they are redeemed or expire. Take
// is single use: a ticket is returned at most once, across every instance
// sharing the store. The caller still checks ExpiresAt against its clock.
type TicketStore interface {
	Put(ctx context.Context, token string, t Ticket, ttl time.Duration) error
	Take(ctx context.Context, token string) (Ticket, bool, error)
}

// MemoryTickets is the single-instance ticket store.
type MemoryTickets struct {
	mu sync.Mutex
	m  map[string]Ticket
	// Now is the clock used to drop expired tickets (default time.Now).
	Now func() time.Time
}

// NewMemoryTickets returns an empty store.
func NewMemoryTickets(now func() time.Time) *MemoryTickets {
	if now == nil {
		now = time.Now
	}
	return &MemoryTickets{m: map[string]Ticket{}, Now: now}
}

// Put stores a ticket; expired tickets are swept as the map grows.
func (s *MemoryTickets) Put(_ context.Context, token string, t Ticket, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= 1024 && len(s.m)&1023 == 0 {
		now := s.Now()
		for k, v := range s.m {
			if now.After(v.ExpiresAt) {
				delete(s.m, k)
			}
		}
	}
	s.m[ticketKey(token)] = t
	return nil
}

// Take removes and returns a ticket.
func (s *MemoryTickets) Take(_ context.Context, token string) (Ticket, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := ticketKey(token)
	t, ok := s.m[k]
	delete(s.m, k)
	return t, ok, nil
}

// RedisTickets shares tickets between edge instances: a ticket minted on one
// can be redeemed on another. GETDEL makes redemption single use; the key's
// TTL drops unused tickets.
type RedisTickets struct {
	Client *redis.Client
	Prefix string // default "eo:wsticket:"
}

func (s *RedisTickets) key(token string) string {
	p := s.Prefix
	if p == "" {
		p = "eo:wsticket:"
	}
	return p + ticketKey(token)
}

// Put stores a ticket for ttl.
func (s *RedisTickets) Put(ctx context.Context, token string, t Ticket, ttl time.Duration) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := s.Client.Set(ctx, s.key(token), b, ttl).Err(); err != nil {
		return fmt.Errorf("live: store ticket: %w", err)
	}
	return nil
}

// Take redeems a ticket with GETDEL.
func (s *RedisTickets) Take(ctx context.Context, token string) (Ticket, bool, error) {
	b, err := s.Client.GetDel(ctx, s.key(token)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Ticket{}, false, nil
	}
	if err != nil {
		return Ticket{}, false, fmt.Errorf("live: redeem ticket: %w", err)
	}
	var t Ticket
	if err := json.Unmarshal(b, &t); err != nil {
		return Ticket{}, false, fmt.Errorf("live: decode ticket: %w", err)
	}
	return t, true, nil
}

// ticketKey is how a ticket is stored: its SHA-256, so a store dump holds no
// redeemable ticket.
func ticketKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}
