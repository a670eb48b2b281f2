package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// newestGood serves, when the snapshot the pointer names cannot be (why),
// the newest published snapshot after prev (any, when nothing is served)
// that loads: fetched from the store, its tables linked from the cache
// where they are there already. With none, the error is why; with nothing
// served, the newest good cached snapshot is tried last.
func (k *Keeper) newestGood(ctx context.Context, prev *view.Snapshot, why error) (*view.Snapshot, error) {
	ms, err := publish.ListSnapshots(ctx, k.o.Store)
	if err != nil {
		k.state.storeFailed(err)
		return nil, fmt.Errorf("%w (and listing the older snapshots: %w)", why, err)
	}
	for _, m := range slices.Backward(ms) {
		if prev != nil && !m.CreatedAt.After(prev.CreatedAt) {
			break
		}
		if k.state.isRejected(m.SnapshotID) {
			continue
		}
		next, err := k.fetchLoad(ctx, k.o.Store, m, prev != nil)
		if errors.Is(err, tables.ErrCorrupt) {
			continue // rejected
		}
		if err != nil {
			return nil, fmt.Errorf("%w (and %w)", why, err)
		}
		k.log.Warn("serving the newest good snapshot instead of the newest published", "snapshot", m.SnapshotID, "because", why)
		return next, nil
	}
	if prev == nil {
		return k.newestCached(ctx, why)
	}
	return nil, why
}

// newestCached serves the newest snapshot in the local cache whose files
// match their manifest checksums and load; why is the failure that led
// here.
func (k *Keeper) newestCached(ctx context.Context, why error) (*view.Snapshot, error) {
	local, err := store.NewLocal(k.o.CacheDir)
	if err != nil {
		return nil, err
	}
	ents, _ := os.ReadDir(k.cacheRoot())
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() > ents[j].Name() })
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(k.cacheRoot(), e.Name(), "manifest.json"))
		if err != nil {
			continue
		}
		var m publish.Manifest
		if err := json.Unmarshal(b, &m); err != nil || m.SnapshotID != e.Name() || k.state.isRejected(m.SnapshotID) {
			continue
		}
		// The cache is laid out like a store (snapshots/<id>/...), so
		// fetching from it onto itself verifies every checksum.
		next, err := k.fetchLoad(ctx, local, m, false)
		if err != nil {
			k.log.Warn("cached snapshot unusable", "snapshot", m.SnapshotID, "err", err)
			continue
		}
		k.log.Warn("serving the newest good snapshot cached on local disk", "snapshot", m.SnapshotID, "because", why)
		return next, nil
	}
	return nil, fmt.Errorf("%w (and no usable cached snapshot)", why)
}

// cacheRoot is where fetched snapshots live: CacheDir/snapshots/<id>/, the
// same layout as a Local store rooted at CacheDir.
func (k *Keeper) cacheRoot() string { return filepath.Join(k.o.CacheDir, "snapshots") }

// pruneCache keeps only the served snapshot and one previous in the cache,
// and removes the temp files of fetches cut short an hour or more ago (an
// edge killed mid-download).
func (k *Keeper) pruneCache(keep string) {
	ents, err := os.ReadDir(k.cacheRoot())
	if err != nil {
		return
	}
	if n, err := store.SweepTemp(k.cacheRoot(), time.Now().Add(-time.Hour)); err != nil || n > 0 {
		k.log.Info("snapshot cache: temp files of cut fetches removed", "files", n, "err", err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != keep {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for i, d := range dirs {
		if i >= 1 {
			_ = os.RemoveAll(filepath.Join(k.cacheRoot(), d))
		}
	}
}

// reject records a snapshot that cannot be served and removes its cached
// copy.
func (k *Keeper) reject(m publish.Manifest, dir string, err error) {
	id := m.SnapshotID
	k.state.reject(id, m.CreatedAt, err)
	k.metrics.rejected.Inc()
	if rerr := os.RemoveAll(dir); rerr != nil {
		k.log.Warn("remove rejected snapshot from the cache", "snapshot", id, "err", rerr)
	}
	k.log.Error("snapshot rejected: it cannot be loaded although its checksums match; serving the newest good snapshot",
		"snapshot", id, "err", err)
}
