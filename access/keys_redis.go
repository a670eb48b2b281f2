package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisKeys is the shared key backend: the store's records in three Redis
// hashes under the deployment's prefix, and a version counter that every
// write increments in the same transaction, so an edge's keyring notices a
// change with one GET (see redisKeySource).
//
//	PREFIX keys:accounts  account id -> Account JSON
//	PREFIX keys:by_hash   hex SHA-256 of the key -> Key JSON
//	PREFIX keys:by_id     key id -> hex SHA-256
//	PREFIX keys:version   integer, +1 a write
type redisKeys struct {
	c                               redis.UniversalClient
	accounts, byHash, byID, version string
}

func newRedisKeys(c redis.UniversalClient, prefix string) *redisKeys {
	p := prefix + "keys:"
	return &redisKeys{c: c, accounts: p + "accounts", byHash: p + "by_hash", byID: p + "by_id", version: p + "version"}
}

// OpenRedisKeys opens the key store kept in the Redis server at url under
// prefix (EO_REDIS_URL, EO_REDIS_PREFIX): the one store that `eo keys` on
// any host and every edge's keyring share. Its calls are bounded by o.
func OpenRedisKeys(ctx context.Context, url, prefix string, o RedisOptions, now func() time.Time) (*Store, error) {
	c, err := dialRedis(ctx, url, o)
	if err != nil {
		return nil, err
	}
	return newStore(&redisKeyBackend{newRedisKeys(c, prefix)}, now), nil
}

// dialRedis connects a client bounded by o and checks the server answers.
func dialRedis(ctx context.Context, url string, o RedisOptions) (*redis.Client, error) {
	opt, err := ClientOptions(url, o)
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("access: redis ping: %w", err)
	}
	return c, nil
}

// redisKeyBackend is Store's keyBackend on redisKeys.
type redisKeyBackend struct{ *redisKeys }

func (r *redisKeyBackend) close() error { return r.c.Close() }

func (r *redisKeyBackend) get(hash, field string) ([]byte, error) {
	b, err := r.c.HGet(context.Background(), hash, field).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("access: keys in redis: %w", err)
	}
	return b, nil
}

func (r *redisKeyBackend) account(id string) ([]byte, error) { return r.get(r.accounts, id) }
func (r *redisKeyBackend) key(hash string) ([]byte, error)   { return r.get(r.byHash, hash) }

func (r *redisKeyBackend) keyHash(id string) (string, error) {
	h, err := r.get(r.byID, id)
	return string(h), err
}

func (r *redisKeyBackend) putAccount(id string, doc []byte) error {
	return r.write(func(ctx context.Context, p redis.Pipeliner) { p.HSet(ctx, r.accounts, id, doc) })
}

func (r *redisKeyBackend) putKey(hash, id string, doc []byte) error {
	return r.write(func(ctx context.Context, p redis.Pipeliner) {
		p.HSet(ctx, r.byHash, hash, doc)
		p.HSet(ctx, r.byID, id, hash)
	})
}

// write runs the writes of f and the version's increment in one MULTI: a
// keyring that sees the new version reads the new records.
func (r *redisKeyBackend) write(f func(context.Context, redis.Pipeliner)) error {
	ctx := context.Background()
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		f(ctx, p)
		p.Incr(ctx, r.version)
		return nil
	})
	if err != nil {
		return fmt.Errorf("access: keys in redis: %w", err)
	}
	return nil
}

// records returns the documents in field order, as the bbolt backend does.
func (r *redisKeyBackend) records(keys bool) ([][]byte, error) {
	h := r.accounts
	if keys {
		h = r.byHash
	}
	m, err := r.c.HGetAll(context.Background(), h).Result()
	if err != nil {
		return nil, fmt.Errorf("access: keys in redis: %w", err)
	}
	fields := make([]string, 0, len(m))
	for f := range m {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	out := make([][]byte, len(fields))
	for i, f := range fields {
		out[i] = []byte(m[f])
	}
	return out, nil
}

// OpenRedisKeyring loads the keys of the store in Redis (see
// OpenRedisKeys) into a Keyring. Each reload is one GET of the version
// counter, and a full read in one MULTI when it moved; with the Watch
// interval of one second a key created, rotated or revoked from any host
// applies on every edge within about a second.
//
// cache is a file of the local work folder that keeps the last records
// read (hashes and account records only, never a key): an edge that starts
// while Redis is unreachable serves the cached keys, and reads Redis again
// at its next reload. With no cache, a start with Redis down fails.
func OpenRedisKeyring(ctx context.Context, url, prefix string, o RedisOptions, cache string, now func() time.Time,
	log *slog.Logger) (*Keyring, error) {
	opt, err := ClientOptions(url, o)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src := &redisKeySource{redisKeys: newRedisKeys(redis.NewClient(opt), prefix), cache: cache, log: log}
	return openKeyring(ctx, src, now)
}

type redisKeySource struct {
	*redisKeys
	cache string
	log   *slog.Logger
}

func (r *redisKeySource) close() error { return r.c.Close() }

func (r *redisKeySource) read(ctx context.Context, prev *keyringData) (*keyringData, error) {
	d, err := r.readRedis(ctx, prev)
	if err == nil || prev != nil || r.cache == "" {
		return d, err
	}
	c, cerr := readKeyCache(r.cache)
	if cerr != nil {
		return nil, fmt.Errorf("%w (and no usable key cache: %v)", err, cerr)
	}
	r.log.Warn("Redis unreachable at start: serving the keys cached by the last good read; Redis is read again at the next reload",
		"err", err, "cache", r.cache, "keys", len(c.keys), "accounts", len(c.accounts))
	return c, nil
}

func (r *redisKeySource) readRedis(ctx context.Context, prev *keyringData) (*keyringData, error) {
	v, err := r.c.Get(ctx, r.version).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("access: keyring: redis: %w", err)
	}
	if prev != nil && prev.stamp == "redis "+v {
		return prev, nil
	}
	var ver *redis.StringCmd
	var keys, accts *redis.MapStringStringCmd
	_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ver, keys, accts = p.Get(ctx, r.version), p.HGetAll(ctx, r.byHash), p.HGetAll(ctx, r.accounts)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("access: keyring: redis: %w", err)
	}
	d := newKeyringData()
	if err := d.fill(keys.Val(), accts.Val()); err != nil {
		return nil, fmt.Errorf("access: keyring: redis: %w", err)
	}
	d.stamp = "redis " + ver.Val()
	if r.cache != "" {
		if err := writeKeyCache(r.cache, keys.Val(), accts.Val()); err != nil {
			r.log.Warn("key cache not written; a start with Redis down would fail", "cache", r.cache, "err", err)
		}
	}
	return d, nil
}

// fill adds key records (hash -> JSON) and account records (id -> JSON).
func (d *keyringData) fill(keys, accounts map[string]string) error {
	for h, v := range keys {
		if err := d.addKey([]byte(h), []byte(v)); err != nil {
			return err
		}
	}
	for id, v := range accounts {
		if err := d.addAccount([]byte(id), []byte(v)); err != nil {
			return err
		}
	}
	return nil
}

// keyCache is the file form of a Redis keyring's last good read.
type keyCache struct {
	Keys     map[string]string `json:"keys"`     // hex hash -> Key JSON
	Accounts map[string]string `json:"accounts"` // id -> Account JSON
}

// writeKeyCache replaces the cache file atomically (a temporary file
// renamed over it), readable by its owner only.
func writeKeyCache(path string, keys, accounts map[string]string) error {
	b, err := json.Marshal(keyCache{Keys: keys, Accounts: accounts})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-cache-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func readKeyCache(path string) (*keyringData, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c keyCache
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d := newKeyringData()
	if err := d.fill(c.Keys, c.Accounts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.stamp = "cache" // never a Redis stamp: the next reload reads Redis
	return d, nil
}
