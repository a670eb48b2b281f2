package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/eodata/eo/reload"
)

// Keyring is the serving side of the key store: an immutable in-memory copy
// of every key and account, read from the store's backend and reloaded when
// it changes.
//
// It exists for two reasons. The serving process holds no lock on the
// store (it reads the file read-only for the few milliseconds a reload
// takes, or one Redis transaction), so `eo keys` — create, rotate, revoke,
// subscribe — works while `eo serve` runs, and several `eo serve` processes
// share one store. And a request's authentication is a SHA-256 and a map
// lookup, with no database transaction, network call or JSON decoding on
// its path.
//
// A change made with `eo keys` takes effect on the next reload: within the
// Watch interval (one second by default, see cmd/eo). Expiry of a rotated
// key and revocation times are compared with the clock at request time, so a
// rotated key stops working at its 24 h mark exactly, reload or not.
type Keyring struct {
	src keySource
	now func() time.Time
	cur *reload.Value[keyringData]
}

// keySource reads a keyring's records: the bbolt file (fileKeySource) or
// Redis (redisKeySource).
type keySource interface {
	// read returns the records, or prev itself while the source's stamp is
	// the one prev was read from.
	read(ctx context.Context, prev *keyringData) (*keyringData, error)
	close() error
}

type keyringData struct {
	stamp    string // of the source state these were read from
	keys     map[[sha256.Size]byte]keyEntry
	byID     map[string][sha256.Size]byte // key id -> its entry in keys
	accounts map[string]Account
	// known maps a presented key that matched a record of keys to that
	// record (string -> *keyEntry), so that a key's requests after its
	// first skip the SHA-256. It only ever holds keys that are in keys (at
	// most len(keys) entries, no growth from guessed keys, which are hashed
	// every time) and lives as long as this data: a change to the source
	// reads new data with an empty map, so a revoked or deleted key leaves
	// it at the reload that sees the change. Revocation and expiry times
	// are still compared with the clock on every request.
	known sync.Map
}

func newKeyringData() *keyringData {
	return &keyringData{keys: map[[sha256.Size]byte]keyEntry{}, byID: map[string][sha256.Size]byte{},
		accounts: map[string]Account{}}
}

// addKey adds the key record v stored under the hex hash h.
func (d *keyringData) addKey(h, v []byte) error {
	var key Key
	if err := json.Unmarshal(v, &key); err != nil {
		return fmt.Errorf("key record %.8s…: %w", h, err)
	}
	var sum [sha256.Size]byte
	if n, err := hex.Decode(sum[:], []byte(key.Hash)); err != nil || n != sha256.Size || key.Hash != string(h) {
		return fmt.Errorf("key record %.8s…: hash does not match its entry", h)
	}
	d.keys[sum] = keyEntry{Key: key, sum: sum, display: key.Display()}
	d.byID[key.ID] = sum
	return nil
}

// addAccount adds the account record v stored under id.
func (d *keyringData) addAccount(id, v []byte) error {
	var a Account
	if err := json.Unmarshal(v, &a); err != nil {
		return fmt.Errorf("account %s: %w", id, err)
	}
	d.accounts[a.ID] = a
	return nil
}

// keyEntry is a key record with its decoded hash and display form.
type keyEntry struct {
	Key
	sum     [sha256.Size]byte
	display string
}

// OpenKeyring loads the key file at path (created by Open; it must exist).
func OpenKeyring(path string, now func() time.Time) (*Keyring, error) {
	return openKeyring(context.Background(), fileKeySource{path: path}, now)
}

func openKeyring(ctx context.Context, src keySource, now func() time.Time) (*Keyring, error) {
	if now == nil {
		now = time.Now
	}
	k := &Keyring{src: src, now: now}
	cur, err := reload.Start(ctx, k.load)
	if err != nil {
		src.close()
		return nil, err
	}
	k.cur = cur
	return k, nil
}

// Len is the number of keys held (any state).
func (k *Keyring) Len() int { return len(k.cur.Get().keys) }

// Close releases the source (the Redis client of a shared keyring).
func (k *Keyring) Close() error { return k.src.close() }

// Reload re-reads the source if it changed since the last load (the file's
// modification time or size, the Redis version counter), and reports
// whether it did. On an error the keyring keeps the keys it had.
func (k *Keyring) Reload() (bool, error) { return k.cur.Reload(context.Background()) }

// load is the keyring's reload.Loader.
func (k *Keyring) load(ctx context.Context, prev *keyringData) (*keyringData, error) {
	return k.src.read(ctx, prev)
}

// fileKeySource reads the bbolt key file of the embedded default.
type fileKeySource struct{ path string }

func (fileKeySource) close() error { return nil }

func (f fileKeySource) read(_ context.Context, prev *keyringData) (*keyringData, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, fmt.Errorf("access: keyring: %w", err)
	}
	st := fmt.Sprintf("file %d %d", fi.ModTime().UnixNano(), fi.Size())
	if prev != nil && st == prev.stamp {
		return prev, nil
	}
	d, err := readKeyring(f.path)
	if err != nil {
		return nil, err
	}
	d.stamp = st
	return d, nil
}

// readKeyring reads the keys and accounts of the file at path from a
// private copy of it. bbolt reads a file through mmap, and a page touched
// after the file was truncated under it (an operator restoring access.db
// with cp) is a SIGBUS that no recover catches: the serving process would
// die. The copy is taken under a shared lock, so it never sees half of an
// `eo keys` transaction (bbolt writers hold the exclusive lock); a file
// rewritten by something that takes no lock gives a torn copy, which fails
// to open or to decode (an error: the keyring keeps its keys), and a panic
// of bbolt on such bytes is turned into an error too.
func readKeyring(path string) (_ *keyringData, err error) {
	cp, err := copyLocked(path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("access: keyring: %w", err)
	}
	defer os.Remove(cp)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("access: keyring: %s is damaged: %v", path, r)
		}
	}()
	db, err := openBoltFile(cp, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second}, "") // a private copy
	if err != nil {
		return nil, fmt.Errorf("access: keyring: open %s: %w", path, err)
	}
	defer db.Close()
	d := newKeyringData()
	err = db.View(func(tx *bolt.Tx) error {
		kb, ab := tx.Bucket(bucketKeys), tx.Bucket(bucketAccounts)
		if kb == nil || ab == nil {
			return fmt.Errorf("%s is not an access database (run eo keys or eo serve once to create it)", path)
		}
		if err := kb.ForEach(d.addKey); err != nil {
			return err
		}
		return ab.ForEach(d.addAccount)
	})
	if err != nil {
		return nil, fmt.Errorf("access: keyring: %w", err)
	}
	return d, nil
}

// copyLocked copies path to a new temporary file while holding a shared
// flock on it (waiting up to timeout for a writer to finish), and returns
// the copy's path.
func copyLocked(path string, timeout time.Duration) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK || time.Now().After(deadline) {
			return "", fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	before, err := f.Stat()
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	after, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if int64(len(b)) != before.Size() || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		return "", fmt.Errorf("%s changed while it was read (being rewritten?); the next reload reads it again", path)
	}
	if err := boltSizeOK(bytes.NewReader(b), int64(len(b))); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp("", "eo-keyring-*.db")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// Watch reloads the keyring every interval until ctx ends, logging (and
// otherwise ignoring) a failed reload: the last good keys keep serving.
func (k *Keyring) Watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	k.cur.Watch(ctx, every,
		func(err error) { log.Warn("key reload failed; serving the previous keys", "err", err) },
		func(d *keyringData) { log.Info("keys reloaded", "keys", len(d.keys), "accounts", len(d.accounts)) })
}

// Authenticate resolves a presented key, with the same rules and errors as
// Store.Authenticate.
func (k *Keyring) Authenticate(_ context.Context, key string) (Principal, error) {
	if !validKeyFormat(key) {
		return Principal{}, ErrInvalidKey
	}
	d := k.cur.Get()
	var rec *keyEntry
	if e, ok := d.known.Load(key); ok {
		rec = e.(*keyEntry)
	} else {
		var kb [64]byte // a valid key is 56 or 59 bytes: hashed from the stack, not a heap copy
		sum := sha256.Sum256(kb[:copy(kb[:], key)])
		e, ok := d.keys[sum]
		// The map lookup found the record by its full hash; the
		// constant-time comparison of the stored hash keeps the check
		// independent of how the map compares keys.
		if !ok || subtle.ConstantTimeCompare(e.sum[:], sum[:]) != 1 {
			return Principal{}, ErrInvalidKey
		}
		rec = &e
		d.known.Store(strings.Clone(key), rec) // the caller's key may point into a request buffer
	}
	if rec.RevokedAt != nil || rec.ExpiresAt != nil { // the clock only for a key that has an end
		now := k.now()
		if (rec.RevokedAt != nil && !now.Before(*rec.RevokedAt)) || (rec.ExpiresAt != nil && !now.Before(*rec.ExpiresAt)) {
			return Principal{}, ErrInvalidKey
		}
	}
	return Principal{KeyID: rec.ID, AccountID: rec.AccountID, Plan: rec.Plan, Display: rec.display}, nil
}

// Active reports whether the key with this id exists and is neither revoked
// nor expired now: what a connection or ticket opened with the key (a
// WebSocket) is checked against after the key itself was presented.
func (k *Keyring) Active(keyID string) bool {
	d := k.cur.Get()
	sum, ok := d.byID[keyID]
	if !ok {
		return false
	}
	rec := d.keys[sum]
	now := k.now()
	return (rec.RevokedAt == nil || now.Before(*rec.RevokedAt)) && (rec.ExpiresAt == nil || now.Before(*rec.ExpiresAt))
}

// GetAccount returns an account (Meter's AccountLookup).
func (k *Keyring) GetAccount(id string) (Account, error) {
	a, ok := k.cur.Get().accounts[id]
	if !ok {
		return Account{}, ErrNotFound
	}
	return a, nil
}

// validKeyFormat reports whether key is "eo_live_" or "eo_sandbox_"
// followed by 48 lowercase hex digits.
func validKeyFormat(key string) bool {
	var rest string
	switch {
	case len(key) == len(LivePrefix)+48 && key[:len(LivePrefix)] == LivePrefix:
		rest = key[len(LivePrefix):]
	case len(key) == len(SandboxPrefix)+48 && key[:len(SandboxPrefix)] == SandboxPrefix:
		rest = key[len(SandboxPrefix):]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
