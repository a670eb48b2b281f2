package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
)

// Plans.
const (
	PlanStandard = "standard"
	PlanTrial    = "trial"
	PlanSandbox  = "sandbox"
	PlanInternal = "internal"
	// PlanData is the standard plan's limits plus the bulk Parquet exports
	// (GET /v1/{game}/exports): for data teams that load whole tables.
	PlanData = "data"
)

// Key prefixes: a live key is "eo_live_" + 48 hex, a sandbox key
// "eo_sandbox_" + 48 hex.
const (
	LivePrefix    = "eo_live_"
	SandboxPrefix = "eo_sandbox_"
)

// Errors.
var (
	ErrInvalidKey    = errors.New("access: invalid api key")
	ErrNotFound      = errors.New("access: not found")
	ErrSandboxExists = errors.New("access: the account already has a sandbox key")
	ErrUnknownPlan   = errors.New("access: unknown plan")
	// ErrNoTrial: a trial key was asked for on an account that has no trial
	// (created without --trial-days, or already subscribed).
	ErrNoTrial = errors.New("access: the account has no trial")
)

// Principal is the authenticated caller of a request.
type Principal struct {
	KeyID     string
	AccountID string
	Plan      string
	// Display is the key's prefix and last four characters, safe to log.
	Display string
}

// Account owns keys; quotas count per account.
type Account struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	TrialEnds *time.Time `json:"trial_ends,omitempty"`
	// Subscribed ends a trial: the account is then on the standard plan.
	SubscribedAt *time.Time `json:"subscribed_at,omitempty"`
}

// Key is a stored key record. The plaintext is never stored.
type Key struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	Plan      string     `json:"plan"`
	Hash      string     `json:"hash"`
	Prefix    string     `json:"prefix"`
	Last4     string     `json:"last4"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// ExpiresAt is set on a rotated key: it keeps working until then.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// ReplacedBy is the id of the key that replaced this one.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// Display renders the key for humans: prefix, ellipsis, last four.
func (k Key) Display() string { return k.Prefix + "…" + k.Last4 }

// Store is the account and key store: the records `eo keys` creates,
// rotates and revokes. It keeps them in a backend: a bbolt file in the work
// folder (Open, the embedded default: one host) or Redis (OpenRedisKeys:
// every edge of a deployment reads the same keys). Keyring is its serving
// side.
type Store struct {
	b   keyBackend
	now func() time.Time
}

// keyBackend holds the store's records as JSON documents: accounts by id,
// keys by the hex SHA-256 of the key with an index from key id to hash.
// A missing record is ErrNotFound.
type keyBackend interface {
	account(id string) ([]byte, error)
	putAccount(id string, doc []byte) error
	key(hash string) ([]byte, error)
	keyHash(id string) (string, error)
	putKey(hash, id string, doc []byte) error
	// records returns every account (keys false) or key document.
	records(keys bool) ([][]byte, error)
	close() error
}

// Open opens (creating if needed) the store in the bbolt file at path.
func Open(path string, now func() time.Time) (*Store, error) {
	b, err := openBoltKeys(path)
	if err != nil {
		return nil, err
	}
	return newStore(b, now), nil
}

func newStore(b keyBackend, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{b: b, now: now}
}

// Close closes the backend.
func (s *Store) Close() error { return s.b.close() }

func hashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// CreateAccount creates an account. trialDays > 0 starts a trial.
func (s *Store) CreateAccount(name string, trialDays int) (Account, error) {
	now := s.now().UTC()
	a := Account{ID: uuid.Must(uuid.NewV7()).String(), Name: name, CreatedAt: now}
	if trialDays > 0 {
		end := now.AddDate(0, 0, trialDays)
		a.TrialEnds = &end
	}
	return a, s.putAccount(a)
}

func (s *Store) putAccount(a Account) error {
	b, _ := json.Marshal(a)
	return s.b.putAccount(a.ID, b)
}

// GetAccount returns an account.
func (s *Store) GetAccount(id string) (Account, error) {
	var a Account
	b, err := s.b.account(id)
	if err != nil {
		return a, err
	}
	return a, json.Unmarshal(b, &a)
}

// Accounts lists every account.
func (s *Store) Accounts() ([]Account, error) {
	return decodeAll(s.b, false, func(Account) bool { return true })
}

// decodeAll decodes every account or key record of b and returns those keep
// accepts.
func decodeAll[T any](b keyBackend, keys bool, keep func(T) bool) ([]T, error) {
	docs, err := b.records(keys)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, d := range docs {
		var x T
		if err := json.Unmarshal(d, &x); err != nil {
			return nil, err
		}
		if keep(x) {
			out = append(out, x)
		}
	}
	return out, nil
}

// Subscribe ends an account's trial: it moves to the standard plan at once.
func (s *Store) Subscribe(accountID string) (Account, error) {
	a, err := s.GetAccount(accountID)
	if err != nil {
		return a, err
	}
	now := s.now().UTC()
	a.SubscribedAt = &now
	if err := s.putAccount(a); err != nil {
		return a, err
	}
	// Trial keys become standard keys.
	keys, err := s.Keys(accountID)
	if err != nil {
		return a, err
	}
	for _, k := range keys {
		if k.Plan == PlanTrial {
			k.Plan = PlanStandard
			if err := s.putKey(k); err != nil {
				return a, err
			}
		}
	}
	return a, nil
}

func newSecret(prefix string) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// CreateKey creates a key on a plan and returns its plaintext, shown once.
// A trial key needs an account in a trial: created with one (its end date
// bounds the trial's quota window) and not yet subscribed, else ErrNoTrial:
// the meter has no trial end to count to without one (the trial would never
// end), and a subscribed account is on the standard plan.
func (s *Store) CreateKey(accountID, plan string) (string, Key, error) {
	acct, err := s.GetAccount(accountID)
	if err != nil {
		return "", Key{}, fmt.Errorf("access: create key: account %s: %w", accountID, err)
	}
	prefix := LivePrefix
	switch plan {
	case PlanStandard, PlanInternal, PlanData:
	case PlanTrial:
		switch {
		case acct.TrialEnds == nil:
			return "", Key{}, fmt.Errorf("%w (account %s); a trial key needs an account created with `eo keys account create --trial-days N`", ErrNoTrial, accountID)
		case acct.SubscribedAt != nil:
			return "", Key{}, fmt.Errorf("%w (account %s subscribed, ending its trial); create a standard key", ErrNoTrial, accountID)
		}
	case PlanSandbox:
		prefix = SandboxPrefix
		keys, err := s.Keys(accountID)
		if err != nil {
			return "", Key{}, err
		}
		for _, k := range keys {
			if k.Plan == PlanSandbox && k.RevokedAt == nil && k.ReplacedBy == "" {
				return "", Key{}, ErrSandboxExists
			}
		}
	default:
		return "", Key{}, fmt.Errorf("%w %q (standard, data, trial, sandbox, internal)", ErrUnknownPlan, plan)
	}
	plain, err := newSecret(prefix)
	if err != nil {
		return "", Key{}, err
	}
	k := Key{ID: uuid.Must(uuid.NewV7()).String(), AccountID: accountID, Plan: plan, Hash: hashKey(plain),
		Prefix: prefix, Last4: plain[len(plain)-4:], CreatedAt: s.now().UTC()}
	if err := s.putKey(k); err != nil {
		return "", Key{}, err
	}
	return plain, k, nil
}

func (s *Store) putKey(k Key) error {
	b, _ := json.Marshal(k)
	return s.b.putKey(k.Hash, k.ID, b)
}

// GetKey returns a key record by id.
func (s *Store) GetKey(id string) (Key, error) {
	var k Key
	h, err := s.b.keyHash(id)
	if err != nil {
		return k, err
	}
	b, err := s.b.key(h)
	if err != nil {
		return k, err
	}
	return k, json.Unmarshal(b, &k)
}

// Keys lists an account's keys ("" = every account), oldest first.
func (s *Store) Keys(accountID string) ([]Key, error) {
	out, err := decodeAll(s.b, true, func(k Key) bool { return accountID == "" || k.AccountID == accountID })
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// Revoke revokes a key at once.
func (s *Store) Revoke(keyID string) error {
	k, err := s.GetKey(keyID)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	k.RevokedAt = &now
	return s.putKey(k)
}

// RotationGrace is how long a rotated key keeps working.
const RotationGrace = 24 * time.Hour

// Rotate issues a replacement key on the same plan; the old key keeps
// working for RotationGrace, then answers 401.
func (s *Store) Rotate(keyID string) (string, Key, error) {
	old, err := s.GetKey(keyID)
	if err != nil {
		return "", Key{}, err
	}
	if old.RevokedAt != nil {
		return "", Key{}, fmt.Errorf("access: rotate %s: key is revoked", keyID)
	}
	exp := s.now().UTC().Add(RotationGrace)
	old.ExpiresAt = &exp
	plain, k, err := s.createRotated(old)
	if err != nil {
		return "", Key{}, err
	}
	old.ReplacedBy = k.ID
	return plain, k, s.putKey(old)
}

func (s *Store) createRotated(old Key) (string, Key, error) {
	plain, err := newSecret(old.Prefix)
	if err != nil {
		return "", Key{}, err
	}
	k := Key{ID: uuid.Must(uuid.NewV7()).String(), AccountID: old.AccountID, Plan: old.Plan, Hash: hashKey(plain),
		Prefix: old.Prefix, Last4: plain[len(plain)-4:], CreatedAt: s.now().UTC()}
	return plain, k, s.putKey(k)
}

// Authenticate resolves a presented key. Unknown, revoked and expired keys
// all return ErrInvalidKey.
func (s *Store) Authenticate(_ context.Context, key string) (Principal, error) {
	if !validKeyFormat(key) {
		return Principal{}, ErrInvalidKey
	}
	h := hashKey(key)
	var k Key
	b, err := s.b.key(h)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil || subtle.ConstantTimeCompare([]byte(k.Hash), []byte(h)) != 1 {
		return Principal{}, ErrInvalidKey
	}
	now := s.now()
	if (k.RevokedAt != nil && !now.Before(*k.RevokedAt)) || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
		return Principal{}, ErrInvalidKey
	}
	return Principal{KeyID: k.ID, AccountID: k.AccountID, Plan: k.Plan, Display: k.Display()}, nil
}

// CopyFrom copies into s every account and key of src that s does not hold
// yet (accounts by id, keys by hash) and returns how many of each it
// copied: how `eo keys import` moves a host's key file into the shared
// Redis store. Records s holds already are left as they are, so running it
// twice copies nothing the second time.
func (s *Store) CopyFrom(src *Store) (accounts, keys int, err error) {
	accts, err := src.Accounts()
	if err != nil {
		return 0, 0, err
	}
	if accounts, err = copyMissing(accts, func(a Account) (bool, error) { return present(s.b.account(a.ID)) }, s.putAccount); err != nil {
		return accounts, 0, err
	}
	ks, err := src.Keys("")
	if err != nil {
		return accounts, 0, err
	}
	keys, err = copyMissing(ks, func(k Key) (bool, error) { return present(s.b.key(k.Hash)) }, s.putKey)
	return accounts, keys, err
}

// present turns a backend read into "held already" (ErrNotFound: no).
func present(_ []byte, err error) (bool, error) {
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// copyMissing puts every item that held reports absent, and counts them.
func copyMissing[T any](items []T, held func(T) (bool, error), put func(T) error) (int, error) {
	n := 0
	for _, it := range items {
		ok, err := held(it)
		if err != nil {
			return n, err
		}
		if ok {
			continue
		}
		if err := put(it); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
