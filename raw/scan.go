package raw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/eodata/eo/store"
)

// ListBatches returns the landed batches the pipeline can read (those with a
// valid manifest), oldest first. Batches it cannot read are left out; see
// ScanBatches.
func ListBatches(ctx context.Context, s store.Store) ([]BatchManifest, error) {
	ok, _, err := ScanBatches(ctx, s)
	return ok, err
}

// SkippedBatch is a landed batch folder whose _batch.json cannot be trusted:
// malformed, incomplete, of a contract version this build does not read, or
// naming another batch. None of its files is read; the pipeline reports it
// (run report, quarantine, log) on every run, and later batches are not held
// up by it.
type SkippedBatch struct {
	// BatchID is the batch's folder name (the manifest's own batch_id is not
	// trusted).
	BatchID string `json:"batch_id"`
	// Reason is one of a few fixed texts ("malformed _batch.json",
	// "missing landed_at", ...) so that runs can be compared.
	Reason string `json:"reason"`
	// Detail says what exactly is wrong.
	Detail string `json:"detail,omitempty"`
	// Body is the manifest's text (its first maxManifestBytes bytes).
	Body string `json:"-"`
}

// maxManifestBytes caps how much of a _batch.json is read: a real one is a
// few hundred bytes.
const maxManifestBytes = 1 << 20

// ScanBatches reads every landed batch manifest and sorts the batches into
// those the pipeline can read (oldest first) and those it must skip (by
// folder name). Only a store error is an error: a bad manifest never stops
// the other batches.
func ScanBatches(ctx context.Context, s store.Store) ([]BatchManifest, []SkippedBatch, error) {
	ok, skipped, err := scanAll(ctx, s)
	return dropReplaced(ok), skipped, err
}

// scanAll is ScanBatches with the batches a compacted one replaces (kept
// for CompactOptions.Keep after it landed) left in.
func scanAll(ctx context.Context, s store.Store) ([]BatchManifest, []SkippedBatch, error) {
	objs, err := s.List(ctx, BatchesPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("raw: list batches: %w", err)
	}
	var ok []BatchManifest
	var skipped []SkippedBatch
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, "/"+BatchManifestName) {
			continue
		}
		folder := strings.TrimSuffix(strings.TrimPrefix(o.Key, BatchesPrefix), "/"+BatchManifestName)
		body, err := readManifest(ctx, s, o.Key)
		if err != nil {
			return nil, nil, err
		}
		m, reason, detail := ParseManifest(folder, body)
		if reason != "" {
			text := body
			if len(text) > maxManifestBytes {
				text = text[:maxManifestBytes]
			}
			skipped = append(skipped, SkippedBatch{BatchID: folder, Reason: reason, Detail: detail,
				Body: strings.ToValidUTF8(string(text), "\uFFFD")})
			continue
		}
		ok = append(ok, m)
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i].BatchID < ok[j].BatchID })
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].BatchID < skipped[j].BatchID })
	return ok, skipped, nil
}

// dropReplaced leaves out the batches a present compacted batch replaces
// (a compaction interrupted before it deleted them): their lines are read
// once, from the compacted batch.
func dropReplaced(ms []BatchManifest) []BatchManifest {
	replaced := map[string]bool{}
	for _, m := range ms {
		for _, id := range m.Replaces {
			replaced[id] = true
		}
	}
	if len(replaced) == 0 {
		return ms
	}
	out := ms[:0]
	for _, m := range ms {
		if !replaced[m.BatchID] {
			out = append(out, m)
		}
	}
	return out
}

// readManifest reads a manifest, at most maxManifestBytes+1 bytes of it.
func readManifest(ctx context.Context, s store.Store, key string) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("raw: read %s: %w", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("raw: read %s: %w", key, err)
	}
	return b, nil
}

// ParseManifest decodes and checks the _batch.json found in a batch folder.
// On a problem it returns the reason (and a detail) the batch is skipped for.
func ParseManifest(folder string, body []byte) (m BatchManifest, reason, detail string) {
	if len(body) > maxManifestBytes {
		return m, "malformed _batch.json", fmt.Sprintf("larger than %d bytes", maxManifestBytes)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, "malformed _batch.json", err.Error()
	}
	switch {
	case m.BatchID == "":
		return m, "missing batch_id", ""
	case !ValidBatchID(m.BatchID):
		return m, "invalid batch_id", fmt.Sprintf("batch_id %.200q is not of the form 20261123T085500.123Z-3f9a1c", m.BatchID)
	case m.BatchID != folder:
		return m, "batch_id does not match its folder", fmt.Sprintf("batch_id %.200q in folder %.200q", m.BatchID, folder)
	case m.ContractVersion == 0:
		return m, "missing contract_version", ""
	case m.ContractVersion != ContractVersion:
		// A newer producer's batch: skipped, not lost. The batch is
		// immutable, so a build that reads its version picks it up.
		return m, "unsupported contract_version", fmt.Sprintf("contract_version %d; this build reads %d", m.ContractVersion, ContractVersion)
	case m.LandedAt.IsZero():
		return m, "missing landed_at", ""
	case m.Files == nil:
		return m, "missing files", ""
	}
	return m, "", ""
}

// localPather is implemented by stores backed by a local folder, so that the
// pipeline can read raw files in place instead of copying them.
type localPather interface {
	LocalPath(key string) string
}

// Materialize makes every file of the given batches readable on local disk and
// returns, per batch id, the local folder holding its entity files. Stores on
// a local folder are read in place; remote ones are copied into cacheDir once
// (a landed batch is immutable, so a cached copy never goes stale).
func Materialize(ctx context.Context, s store.Store, batches []BatchManifest, cacheDir string) (map[string]string, error) {
	out := make(map[string]string, len(batches))
	lp, local := s.(localPather)
	for _, m := range batches {
		if !ValidBatchID(m.BatchID) { // ScanBatches never returns one
			return nil, fmt.Errorf("raw: batch id %q is not a batch id", m.BatchID)
		}
		prefix := BatchesPrefix + m.BatchID + "/"
		if local {
			out[m.BatchID] = lp.LocalPath(prefix)
			continue
		}
		dir := filepath.Join(cacheDir, m.BatchID)
		if _, err := os.Stat(filepath.Join(dir, BatchManifestName)); err == nil {
			out[m.BatchID] = dir
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for e := range m.Files {
			if !slices.Contains(Entities, e) {
				continue // not an entity of the contract: never read (the pipeline quarantines it)
			}
			err := download(ctx, s, prefix+string(e)+".ndjson", filepath.Join(dir, string(e)+".ndjson"))
			if errors.Is(err, store.ErrNotFound) {
				continue // listed but absent: the pipeline quarantines the file as missing
			}
			if err != nil {
				return nil, err
			}
		}
		if err := download(ctx, s, prefix+BatchManifestName, filepath.Join(dir, BatchManifestName)); err != nil {
			return nil, err
		}
		out[m.BatchID] = dir
	}
	return out, nil
}

func download(ctx context.Context, s store.Store, key, path string) error {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("raw: fetch %s: %w", key, err)
	}
	defer rc.Close()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("raw: fetch %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ErrNoBatches is returned when the store has no landed batch.
var ErrNoBatches = errors.New("raw: no landed batch")
