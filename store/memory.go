package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is an in-process Store backed by a map, for fast unit tests.
type Memory struct {
	mu   sync.RWMutex
	objs map[string]memObject
	upd  sync.Mutex // held through an Update, whose function may read the store
}

type memObject struct {
	data    []byte
	modTime time.Time
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{objs: make(map[string]memObject)}
}

// Put implements Store. The object becomes visible only after r has been
// read completely.
func (m *Memory) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: memory put: %w", err)
	}
	b, err := readSized(ctx, r, size)
	if err != nil {
		return fmt.Errorf("store: memory put %s: %w", key, err)
	}
	m.mu.Lock()
	m.objs[key] = memObject{data: bytes.Clone(b), modTime: time.Now()}
	m.mu.Unlock()
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	m.mu.RLock()
	o, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("store: memory get %s: %w", key, ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

// Stat implements Store.
func (m *Memory) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	m.mu.RLock()
	o, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return ObjectInfo{}, fmt.Errorf("store: memory stat %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	m.mu.RLock()
	var out []ObjectInfo
	for k, o := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		}
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	delete(m.objs, key)
	m.mu.Unlock()
	return nil
}

// Update implements Store: one Update at a time.
func (m *Memory) Update(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: memory update: %w", err)
	}
	m.upd.Lock()
	defer m.upd.Unlock()
	m.mu.RLock()
	o, ok := m.objs[key]
	m.mu.RUnlock()
	var cur []byte
	if ok {
		cur = append([]byte{}, o.data...) // an empty object is not a missing one
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	return m.Put(ctx, key, bytes.NewReader(next), int64(len(next)))
}

// String implements Store.
func (m *Memory) String() string { return "memory" }
