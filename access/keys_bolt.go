package access

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketAccounts = []byte("accounts")
	bucketKeys     = []byte("keys")    // hash -> Key
	bucketKeyIDs   = []byte("key_ids") // key id -> hash
)

// boltKeys is the embedded key backend: a bbolt file in the work folder.
type boltKeys struct{ db *bolt.DB }

func openBoltKeys(path string) (*boltKeys, error) {
	db, err := openBoltFile(path, &bolt.Options{Timeout: 5 * time.Second},
		"another eo keys command is changing the keys; run this one again when it ends")
	if err != nil {
		return nil, fmt.Errorf("access: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketAccounts, bucketKeys, bucketKeyIDs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &boltKeys{db: db}, nil
}

func (b *boltKeys) close() error { return b.db.Close() }

// get returns a copy of the value at key in bucket, ErrNotFound if absent.
func (b *boltKeys) get(bucket []byte, key string) ([]byte, error) {
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

func (b *boltKeys) account(id string) ([]byte, error) { return b.get(bucketAccounts, id) }
func (b *boltKeys) key(hash string) ([]byte, error)   { return b.get(bucketKeys, hash) }

func (b *boltKeys) keyHash(id string) (string, error) {
	h, err := b.get(bucketKeyIDs, id)
	return string(h), err
}

func (b *boltKeys) putAccount(id string, doc []byte) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketAccounts).Put([]byte(id), doc) })
}

func (b *boltKeys) putKey(hash, id string, doc []byte) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketKeys).Put([]byte(hash), doc); err != nil {
			return err
		}
		return tx.Bucket(bucketKeyIDs).Put([]byte(id), []byte(hash))
	})
}

func (b *boltKeys) records(keys bool) ([][]byte, error) {
	bucket := bucketAccounts
	if keys {
		bucket = bucketKeys
	}
	var out [][]byte
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			out = append(out, append([]byte(nil), v...))
			return nil
		})
	})
	return out, err
}
