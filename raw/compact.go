package raw

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/eodata/eo/store"
)

// Compaction. The live lander lands a small batch every few seconds (17,000
// a day), and every pipeline run lists, reads and stages each of them.
// Compact merges, once an hour is over, the consecutive batches of one
// source landed in that hour into one batch that holds their lines in
// their order: the pipeline reads lines in (batch, line) order, so the
// merged batch, placed where the first of them was, means what they meant.
// The merged batch names them (BatchManifest.Replaces) and lands before
// they are deleted; ScanBatches reads the merged one only when both are
// there. They are deleted by a later compaction, once the merged batch has
// stood for CompactOptions.Keep: a pipeline run that listed them before
// the merge (another runner on the same store) still reads them.

// CompactOptions configure Compact.
type CompactOptions struct {
	// Source is the batches' source to compact ("live").
	Source string
	// Settle: an hour is compacted once it ended this long ago, so that a
	// batch of the hour landing late is not left on its own (default 10m).
	Settle time.Duration
	// TmpDir stages the merged files ("": the system's).
	TmpDir string
	// Keep is how long the batches a merged one replaces stay after it
	// landed (default 1h): longer than a run that listed them takes.
	Keep time.Duration
}

// Compacted is one merged batch.
type Compacted struct {
	BatchID  string
	Replaces []string
	Lines    int64
}

// Compact merges the settled hours of o.Source batches (at least two
// batches each) and deletes the batches merged more than o.Keep ago; it
// returns what it merged.
func Compact(ctx context.Context, s store.Store, now time.Time, o CompactOptions) ([]Compacted, error) {
	if o.Settle <= 0 {
		o.Settle = 10 * time.Minute
	}
	if o.Keep <= 0 {
		o.Keep = time.Hour
	}
	all, _, err := scanAll(ctx, s)
	if err != nil {
		return nil, err
	}
	if err := deleteMerged(ctx, s, all, now.Add(-o.Keep)); err != nil {
		return nil, err
	}
	batches := dropReplaced(all)
	var out []Compacted
	for _, run := range compactionRuns(batches, o.Source, now.Add(-o.Settle)) {
		c, err := mergeRun(ctx, s, run, o.TmpDir)
		if err != nil {
			return out, fmt.Errorf("raw: compact %s..%s: %w", run[0].BatchID, run[len(run)-1].BatchID, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// compactionRuns are the maximal runs, in batch order, of at least two
// uncompacted batches of source landed in one UTC hour that ended before
// settled. A batch of another source (or a compacted one) between two
// batches ends a run: merging across it would reorder lines. A run whose
// first batch shares its millisecond with a batch outside it is left alone
// (the merged batch's id could sort on the wrong side of that batch).
func compactionRuns(batches []BatchManifest, source string, settled time.Time) [][]BatchManifest {
	hourOf := func(m BatchManifest) (time.Time, bool) {
		t, err := time.Parse("20060102T150405.000Z", m.BatchID[:20])
		return t.Truncate(time.Hour), err == nil
	}
	var runs [][]BatchManifest
	var cur []BatchManifest
	var curHour time.Time
	flush := func() {
		if len(cur) >= 2 && !curHour.Add(time.Hour).After(settled) && !sharesMillisecond(batches, cur) {
			runs = append(runs, cur)
		}
		cur = nil
	}
	for _, m := range batches {
		h, ok := hourOf(m)
		if !ok || m.Source != source || len(m.Replaces) > 0 {
			flush()
			continue
		}
		if len(cur) > 0 && !h.Equal(curHour) {
			flush()
		}
		cur, curHour = append(cur, m), h
	}
	flush()
	return runs
}

func sharesMillisecond(batches, run []BatchManifest) bool {
	ms := run[0].BatchID[:20]
	in := map[string]bool{}
	for _, m := range run {
		in[m.BatchID] = true
	}
	for _, m := range batches {
		if !in[m.BatchID] && strings.HasPrefix(m.BatchID, ms) {
			return true
		}
	}
	return false
}

// mergeRun lands one batch with the run's lines, then deletes the run.
func mergeRun(ctx context.Context, s store.Store, run []BatchManifest, tmpDir string) (Compacted, error) {
	var suffix [3]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return Compacted{}, err
	}
	// The first batch's millisecond: the merged batch sorts where it was.
	id := run[0].BatchID[:21] + hex.EncodeToString(suffix[:])
	b, err := newBatchWithID(tmpDir, run[0].Source, id)
	if err != nil {
		return Compacted{}, err
	}
	c := Compacted{BatchID: id}
	for _, m := range run {
		c.Replaces = append(c.Replaces, m.BatchID)
		for _, e := range Entities {
			if _, ok := m.Files[e]; !ok {
				continue
			}
			n, err := copyLines(ctx, s, b, e, BatchesPrefix+m.BatchID+"/"+string(e)+".ndjson")
			if err != nil {
				b.Discard()
				return c, err
			}
			c.Lines += n
		}
	}
	b.replaces = c.Replaces
	if _, err := b.Land(ctx, s, run[len(run)-1].LandedAt); err != nil {
		return c, err
	}
	return c, nil
}

// deleteMerged deletes the batches that a merged batch landed (written)
// before cutoff replaces. all holds every readable batch, replaced ones
// too; a merged batch whose batches are gone costs nothing here.
func deleteMerged(ctx context.Context, s store.Store, all []BatchManifest, cutoff time.Time) error {
	present := map[string]bool{}
	for _, m := range all {
		present[m.BatchID] = true
	}
	for _, m := range all {
		var left []string
		for _, id := range m.Replaces {
			if present[id] {
				left = append(left, id)
			}
		}
		if len(left) == 0 {
			continue
		}
		fi, err := s.Stat(ctx, BatchesPrefix+m.BatchID+"/"+BatchManifestName)
		if err != nil {
			return fmt.Errorf("raw: compact: %w", err)
		}
		if !fi.ModTime.Before(cutoff) {
			continue // a run that listed them may still be reading them
		}
		for _, id := range left {
			if err := deleteBatch(ctx, s, id); err != nil {
				// ScanBatches reads the merged batch only; the next
				// compaction deletes what is left.
				return fmt.Errorf("raw: compact: merged into %s, but deleting %s: %w", m.BatchID, id, err)
			}
		}
	}
	return nil
}

// copyLines appends every line of the object at key to b's entity e.
func copyLines(ctx context.Context, s store.Store, b *Batch, e Entity, key string) (int64, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	r := bufio.NewReaderSize(rc, 1<<20)
	var n int64
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if err := b.AddLine(e, []byte(strings.TrimSuffix(string(line), "\n"))); err != nil {
				return n, err
			}
			n++
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read %s: %w", key, err)
		}
	}
}

// deleteBatch removes a batch: its manifest first (the batch is then not
// landed), then its files.
func deleteBatch(ctx context.Context, s store.Store, id string) error {
	prefix := BatchesPrefix + id + "/"
	if err := s.Delete(ctx, prefix+BatchManifestName); err != nil {
		return err
	}
	objs, err := s.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := s.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}
