package raw

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/eodata/eo/store"
)

// NewBatchID returns a sortable batch id: the UTC landing time to the
// millisecond and six random hex digits.
func NewBatchID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// batchIDPattern is the form NewBatchID writes, e.g. 20261123T085500.123Z-3f9a1c.
var batchIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{6}$`)

// ValidBatchID reports whether id has the form of a batch id. A batch id
// names a folder of the store: one of another form (a path, say) is never
// used.
func ValidBatchID(id string) bool { return batchIDPattern.MatchString(id) }

// Batch accumulates records in local NDJSON files and lands them as one
// immutable batch. It is not safe for concurrent use.
type Batch struct {
	id     string
	source string
	dir    string
	files  map[Entity]*os.File
	bufs   map[Entity]*bufio.Writer
	counts map[Entity]int
	// replaces: the batches a compacted batch holds (Compact).
	replaces []string
}

// NewBatch starts a batch whose files are staged in a temporary folder under
// tmpDir ("" means the system default).
func NewBatch(tmpDir, source string, now time.Time) (*Batch, error) {
	return newBatchWithID(tmpDir, source, NewBatchID(now))
}

func newBatchWithID(tmpDir, source, id string) (*Batch, error) {
	dir, err := os.MkdirTemp(tmpDir, "eo-batch-")
	if err != nil {
		return nil, fmt.Errorf("raw: stage batch: %w", err)
	}
	return &Batch{id: id, source: source, dir: dir,
		files: map[Entity]*os.File{}, bufs: map[Entity]*bufio.Writer{}, counts: map[Entity]int{}}, nil
}

// ID is the batch id.
func (b *Batch) ID() string { return b.id }

// Add appends one record to the entity's file.
func (b *Batch) Add(e Entity, rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("raw: encode %s record: %w", e, err)
	}
	return b.AddLine(e, line)
}

// AddLine appends one already-encoded line (used by importers and tests that
// need to land malformed rows on purpose).
func (b *Batch) AddLine(e Entity, line []byte) error {
	w, ok := b.bufs[e]
	if !ok {
		f, err := os.Create(filepath.Join(b.dir, string(e)+".ndjson"))
		if err != nil {
			return fmt.Errorf("raw: stage %s: %w", e, err)
		}
		b.files[e] = f
		w = bufio.NewWriterSize(f, 1<<20)
		b.bufs[e] = w
	}
	if _, err := w.Write(line); err != nil {
		return fmt.Errorf("raw: stage %s: %w", e, err)
	}
	if err := w.WriteByte('\n'); err != nil {
		return fmt.Errorf("raw: stage %s: %w", e, err)
	}
	b.counts[e]++
	return nil
}

// Count returns how many lines the entity has so far.
func (b *Batch) Count(e Entity) int { return b.counts[e] }

// Land uploads every file, then the batch manifest last, and removes the
// staging folder. A batch interrupted before its manifest is written has not
// landed and is invisible to the pipeline.
func (b *Batch) Land(ctx context.Context, s store.Store, now time.Time) (BatchManifest, error) {
	defer os.RemoveAll(b.dir)
	m := BatchManifest{BatchID: b.id, ContractVersion: ContractVersion, Source: b.source,
		LandedAt: now.UTC(), Files: map[Entity]int{}, Replaces: b.replaces}
	ents := make([]Entity, 0, len(b.bufs))
	for e := range b.bufs {
		ents = append(ents, e)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i] < ents[j] })
	for _, e := range ents {
		if err := b.bufs[e].Flush(); err != nil {
			return m, fmt.Errorf("raw: flush %s: %w", e, err)
		}
		if err := b.files[e].Close(); err != nil {
			return m, fmt.Errorf("raw: close %s: %w", e, err)
		}
		key := BatchesPrefix + b.id + "/" + string(e) + ".ndjson"
		if err := store.PutFile(ctx, s, key, b.files[e].Name()); err != nil {
			return m, fmt.Errorf("raw: land %s: %w", e, err)
		}
		m.Files[e] = b.counts[e]
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	if err := store.PutBytes(ctx, s, BatchesPrefix+b.id+"/"+BatchManifestName, body); err != nil {
		return m, fmt.Errorf("raw: land batch manifest: %w", err)
	}
	return m, nil
}

// Discard drops a batch that will not be landed.
func (b *Batch) Discard() {
	for _, f := range b.files {
		f.Close()
	}
	os.RemoveAll(b.dir)
}
