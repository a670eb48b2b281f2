// Package publish owns the snapshots in the object store (package store).
// Snapshots are published atomically (table files, then the manifest,
// then the pointer, moved by compare-and-swap: store.Store.Update),
// fetched with their checksums verified, listed as current, published or
// orphan, and cleaned (those past retention, complete or partial, removed
// manifest first).
package publish

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/eodata/eo/store"
)

// ErrNoSnapshot reports that no snapshot pointer has been published yet.
var ErrNoSnapshot = errors.New("publish: no snapshot published")

const (
	// snapshotsPrefix holds every snapshot folder and the pointer.
	snapshotsPrefix = "snapshots/"
	// PointerKey names the object that says which snapshot is current.
	PointerKey = "snapshots/latest.json"
	// manifestName is the manifest's file name inside a snapshot folder.
	manifestName = "manifest.json"
	// publishedName marks a snapshot the pointer has named: written right
	// after the pointer moves. A snapshot with a manifest and without it
	// (and not current) is an orphan: its publish stopped between the
	// manifest and the pointer and it was never served.
	publishedName = "published.json"
)

// TableFile is a local Parquet file to publish as one table.
type TableFile struct {
	Name string // table name, e.g. "matches"; stored as <Name>.parquet
	Path string // local path of the Parquet file
	Rows int64  // row count, recorded in the manifest
	// Internal marks a table the service reads but does not publish to
	// customers (upstream ids, pre-rendered parts): it is stored as
	// internal/<Name>.parquet, outside the snapshot's public tables.
	Internal bool
}

// InternalDir is the folder of a snapshot's internal tables.
const InternalDir = "internal"

// TableEntry describes one published table in a manifest.
type TableEntry struct {
	Name   string `json:"name"`
	File   string `json:"file"` // relative to the snapshot folder, e.g. "matches.parquet"
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"` // lowercase hex
	// Internal: a table for the service, not for customers (TableFile.Internal).
	Internal bool `json:"internal,omitempty"`
}

// Manifest lists the tables of one snapshot. It is written after every table
// file, so a snapshot with a manifest is complete.
type Manifest struct {
	SnapshotID         string            `json:"snapshot_id"`
	CreatedAt          time.Time         `json:"created_at"`
	SchemaVersion      int               `json:"schema_version"`
	PipelineVersion    string            `json:"pipeline_version"`
	RawContractVersion int               `json:"raw_contract_version"`
	Tables             []TableEntry      `json:"tables"` // sorted by Name
	Extra              map[string]string `json:"extra,omitempty"`
}

// Pointer names the current snapshot; it is written last by Publish.
type Pointer struct {
	SnapshotID     string    `json:"snapshot_id"`
	Manifest       string    `json:"manifest"` // store key of the manifest
	ManifestSHA256 string    `json:"manifest_sha256"`
	PublishedAt    time.Time `json:"published_at"`
}

// NewSnapshotID returns a new snapshot id that sorts by time: the UTC second
// of now followed by 6 random hex digits, e.g. "20261123T085500Z-3f9a1c".
func NewSnapshotID(now time.Time) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("publish: crypto/rand: " + err.Error())
	}
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func snapshotDir(id string) string    { return snapshotsPrefix + id + "/" }
func manifestKey(id string) string    { return snapshotDir(id) + manifestName }
func publishedKey(id string) string   { return snapshotDir(id) + publishedName }
func tableKey(id, file string) string { return snapshotDir(id) + file }

// TableKey is the store key of a snapshot's table file (file as in its
// manifest entry, e.g. "matches.parquet").
func TableKey(snapshotID, file string) string { return tableKey(snapshotID, file) }

// validSnapshotID refuses ids that would escape or confuse the key layout.
func validSnapshotID(id string) error {
	if id == "" {
		return errors.New("empty snapshot id")
	}
	if strings.ContainsAny(id, "/\\\x00") || id == "." || id == ".." ||
		strings.HasPrefix(id, store.TempPrefix) || id == path.Base(PointerKey) {
		return fmt.Errorf("bad snapshot id %q", id)
	}
	return nil
}

// validTableFile refuses manifest file names that leave the snapshot folder.
func validTableFile(file string) error {
	if file == "" || path.IsAbs(file) || path.Clean(file) != file ||
		file == manifestName || strings.HasPrefix(file, "../") || file == ".." {
		return fmt.Errorf("bad table file name %q", file)
	}
	return store.ValidKey(file)
}

// Publish uploads every table file to snapshots/<id>/<name>.parquet (an
// internal one to snapshots/<id>/internal/<name>.parquet; size and SHA-256
// computed while streaming), then writes
// snapshots/<id>/manifest.json, then moves the pointer. Any error aborts
// before the pointer moves, so readers keep the previous snapshot.
//
// m carries SnapshotID, CreatedAt and the versions; an empty SnapshotID is
// generated from CreatedAt and a zero CreatedAt becomes now. Publish fills
// m.Tables and returns the manifest it wrote.
func Publish(ctx context.Context, s store.Store, m Manifest, files []TableFile) (Manifest, error) {
	return PublishIf(ctx, s, m, files, nil)
}

// Guard decides, as the pointer moves, whether the snapshot may replace the
// current one (cur; nil when the pointer names none it can read). An error
// keeps the pointer where it is.
type Guard func(cur *Manifest) error

// PublishIf is Publish with a guard: the pointer moves with a
// compare-and-swap (Store.Update), and guard sees the manifest of the
// snapshot it would replace at that instant, so no other publisher can
// move the pointer between the check and the move. When guard refuses,
// the snapshot's files are removed again (best effort: what is left is an
// orphan, never served, which Clean removes) and guard's error is
// returned, wrapped.
func PublishIf(ctx context.Context, s store.Store, m Manifest, files []TableFile, guard Guard) (Manifest, error) {
	m, sorted, err := prepareManifest(m, files)
	if err != nil {
		return Manifest{}, err
	}
	// Never overwrite a published snapshot.
	if _, err := s.Stat(ctx, manifestKey(m.SnapshotID)); err == nil {
		return Manifest{}, fmt.Errorf("publish: snapshot %s is already published", m.SnapshotID)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Manifest{}, fmt.Errorf("publish: snapshot %s: check manifest: %w", m.SnapshotID, err)
	}

	m.Tables = make([]TableEntry, 0, len(sorted))
	for _, f := range sorted {
		e, err := uploadTable(ctx, s, m.SnapshotID, f)
		if err != nil {
			return Manifest{}, err
		}
		m.Tables = append(m.Tables, e)
	}

	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("publish: encode manifest: %w", err)
	}
	mb = append(mb, '\n')
	if err := store.PutBytes(ctx, s, manifestKey(m.SnapshotID), mb); err != nil {
		return Manifest{}, fmt.Errorf("publish: write manifest of %s: %w", m.SnapshotID, err)
	}

	sum := sha256.Sum256(mb)
	p := Pointer{
		SnapshotID:     m.SnapshotID,
		Manifest:       manifestKey(m.SnapshotID),
		ManifestSHA256: hex.EncodeToString(sum[:]),
	}
	var pb []byte
	var refused error
	err = s.Update(ctx, PointerKey, func(cur []byte) ([]byte, error) {
		if guard != nil {
			cm, err := pointedManifest(ctx, s, cur)
			if err != nil {
				return nil, err
			}
			if err := guard(cm); err != nil {
				refused = err
				return nil, err
			}
		}
		p.PublishedAt = time.Now().UTC()
		pb, err = json.MarshalIndent(p, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("publish: encode pointer: %w", err)
		}
		pb = append(pb, '\n')
		return pb, nil
	})
	if refused != nil {
		unpublish(ctx, s, m)
		return Manifest{}, fmt.Errorf("publish: snapshot %s not published: %w", m.SnapshotID, refused)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("publish: move pointer to %s: %w", m.SnapshotID, err)
	}
	// The snapshot is published now; the marker only records it for the
	// listing once the pointer moves on, so its failure is not the
	// publish's (ListSnapshots counts the current snapshot without one).
	_ = store.PutBytes(ctx, s, publishedKey(m.SnapshotID), pb)
	return m, nil
}

// prepareManifest fills m's defaults (CreatedAt, SnapshotID) and checks it
// and the table files, returned sorted by name.
func prepareManifest(m Manifest, files []TableFile) (Manifest, []TableFile, error) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	m.CreatedAt = m.CreatedAt.UTC()
	if m.SnapshotID == "" {
		m.SnapshotID = NewSnapshotID(m.CreatedAt)
	}
	if err := validSnapshotID(m.SnapshotID); err != nil {
		return Manifest{}, nil, fmt.Errorf("publish: %w", err)
	}
	if len(files) == 0 {
		return Manifest{}, nil, fmt.Errorf("publish: snapshot %s: no table files", m.SnapshotID)
	}
	sorted := append([]TableFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i, f := range sorted {
		if f.Name == "" || strings.ContainsAny(f.Name, "/\\") || strings.HasPrefix(f.Name, ".") ||
			validTableFile(f.Name+".parquet") != nil {
			return Manifest{}, nil, fmt.Errorf("publish: snapshot %s: bad table name %q", m.SnapshotID, f.Name)
		}
		if i > 0 && sorted[i-1].Name == f.Name {
			return Manifest{}, nil, fmt.Errorf("publish: snapshot %s: table %q listed twice", m.SnapshotID, f.Name)
		}
	}
	return m, sorted, nil
}

// pointedManifest is the manifest the pointer bytes b name, for a guard:
// nil when there is no pointer or it names nothing readable (a damaged
// pointer, a snapshot removed by hand), which a publish may replace; an
// error when the store does not answer.
func pointedManifest(ctx context.Context, s store.Store, b []byte) (*Manifest, error) {
	if b == nil {
		return nil, nil
	}
	p, err := decodePointer(b)
	if err != nil {
		return nil, nil
	}
	m, err := loadPointed(ctx, s, p)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrChecksum) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// unpublish removes a snapshot whose pointer move was refused, manifest
// first (as Clean does), best effort.
func unpublish(ctx context.Context, s store.Store, m Manifest) {
	sn := &storedSnapshot{id: m.SnapshotID, complete: true}
	for _, t := range m.Tables {
		sn.keys = append(sn.keys, tableKey(m.SnapshotID, t.File))
	}
	_ = deleteSnapshot(ctx, s, sn)
}

// hashCounter computes SHA-256 and length of what passes through it.
type hashCounter struct {
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func newHashCounter() *hashCounter { return &hashCounter{h: sha256.New()} }

func (c *hashCounter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func (c *hashCounter) sum() string { return hex.EncodeToString(c.h.Sum(nil)) }

func uploadTable(ctx context.Context, s store.Store, id string, f TableFile) (TableEntry, error) {
	file := f.Name + ".parquet"
	if f.Internal {
		file = InternalDir + "/" + file
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return TableEntry{}, fmt.Errorf("publish: upload %s: %w", file, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return TableEntry{}, fmt.Errorf("publish: upload %s: %w", file, err)
	}
	hc := newHashCounter()
	// LimitReader keeps the declared size honest if the file grows meanwhile.
	r := io.TeeReader(io.LimitReader(fh, fi.Size()), hc)
	if err := s.Put(ctx, tableKey(id, file), r, fi.Size()); err != nil {
		return TableEntry{}, fmt.Errorf("publish: upload %s: %w", file, err)
	}
	if hc.n != fi.Size() {
		return TableEntry{}, fmt.Errorf("publish: upload %s: read %d bytes, want %d", file, hc.n, fi.Size())
	}
	return TableEntry{Name: f.Name, File: file, Rows: f.Rows, Bytes: hc.n, SHA256: hc.sum(), Internal: f.Internal}, nil
}

// ReadPointer returns the current pointer; the error wraps ErrNoSnapshot if
// nothing has been published.
func ReadPointer(ctx context.Context, s store.Store) (Pointer, error) {
	b, err := store.GetBytes(ctx, s, PointerKey)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Pointer{}, fmt.Errorf("publish: read pointer in %s: %w", s, ErrNoSnapshot)
		}
		return Pointer{}, fmt.Errorf("publish: read pointer: %w", err)
	}
	return decodePointer(b)
}

func decodePointer(b []byte) (Pointer, error) {
	var p Pointer
	if err := json.Unmarshal(b, &p); err != nil {
		return Pointer{}, fmt.Errorf("publish: decode pointer %s: %w", PointerKey, err)
	}
	if err := validSnapshotID(p.SnapshotID); err != nil {
		return Pointer{}, fmt.Errorf("publish: decode pointer %s: %w", PointerKey, err)
	}
	return p, nil
}

// ReadManifest reads the manifest of one snapshot; the error wraps
// ErrNotFound if the snapshot has no manifest.
func ReadManifest(ctx context.Context, s store.Store, snapshotID string) (Manifest, error) {
	if err := validSnapshotID(snapshotID); err != nil {
		return Manifest{}, fmt.Errorf("publish: read manifest: %w", err)
	}
	b, err := store.GetBytes(ctx, s, manifestKey(snapshotID))
	if err != nil {
		return Manifest{}, fmt.Errorf("publish: read manifest of %s: %w", snapshotID, err)
	}
	return decodeManifest(b, snapshotID)
}

func decodeManifest(b []byte, snapshotID string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("publish: decode manifest of %s: %w", snapshotID, err)
	}
	if m.SnapshotID != snapshotID {
		return Manifest{}, fmt.Errorf("publish: manifest of %s names snapshot %q", snapshotID, m.SnapshotID)
	}
	return m, nil
}

// LoadLatest reads the pointer and the manifest it names, verifying the
// manifest's SHA-256 against the pointer (ErrChecksum on mismatch).
func LoadLatest(ctx context.Context, s store.Store) (Pointer, Manifest, error) {
	p, err := ReadPointer(ctx, s)
	if err != nil {
		return Pointer{}, Manifest{}, err
	}
	m, err := loadPointed(ctx, s, p)
	if err != nil {
		return Pointer{}, Manifest{}, err
	}
	return p, m, nil
}

// loadPointed reads the manifest p names and checks it against p.
func loadPointed(ctx context.Context, s store.Store, p Pointer) (Manifest, error) {
	key := p.Manifest
	if key == "" {
		key = manifestKey(p.SnapshotID)
	}
	b, err := store.GetBytes(ctx, s, key)
	if err != nil {
		return Manifest{}, fmt.Errorf("publish: load snapshot %s: %w", p.SnapshotID, err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, p.ManifestSHA256) {
		return Manifest{}, fmt.Errorf("publish: load snapshot %s: manifest sha256 %s, pointer says %s: %w",
			p.SnapshotID, got, p.ManifestSHA256, store.ErrChecksum)
	}
	return decodeManifest(b, p.SnapshotID)
}

// Fetch downloads every table of m into destDir/<snapshot_id>/, verifying
// size and SHA-256 (an error wrapping ErrChecksum names the table) and
// writing each file atomically. Files already present with the right size
// and checksum are kept, so destDir works as a local cache. Fetch also writes
// destDir/<id>/manifest.json and returns the snapshot folder.
func Fetch(ctx context.Context, s store.Store, m Manifest, destDir string) (string, error) {
	dir, _, err := FetchCounted(ctx, s, m, destDir)
	return dir, err
}

// FetchStats counts where a fetch took each table's bytes from.
type FetchStats struct {
	Downloaded int64 // bytes read from the store
	Reused     int64 // bytes linked from another snapshot's folder in the cache
	Kept       int64 // bytes already in place
}

// FetchCounted is Fetch, and says where the bytes came from. A table that
// another snapshot in destDir holds with the same size and SHA-256 (as its
// manifest.json says and its file verifies) is hard-linked from there
// instead of downloaded: after an incremental run most tables are the
// bytes of the snapshot before.
func FetchCounted(ctx context.Context, s store.Store, m Manifest, destDir string) (string, FetchStats, error) {
	var st FetchStats
	if err := validSnapshotID(m.SnapshotID); err != nil {
		return "", st, fmt.Errorf("publish: fetch: %w", err)
	}
	dir := filepath.Join(destDir, m.SnapshotID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", st, fmt.Errorf("publish: fetch %s: %w", m.SnapshotID, err)
	}
	cached := cachedTables(destDir, m.SnapshotID)
	for _, t := range m.Tables {
		if err := fetchTable(ctx, s, m.SnapshotID, t, dir, cached, &st); err != nil {
			return "", st, err
		}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", st, fmt.Errorf("publish: fetch %s: encode manifest: %w", m.SnapshotID, err)
	}
	mb = append(mb, '\n')
	if err := store.WriteFileAtomic(ctx, filepath.Join(dir, manifestName), bytes.NewReader(mb), int64(len(mb))); err != nil {
		return "", st, fmt.Errorf("publish: fetch %s: write manifest: %w", m.SnapshotID, err)
	}
	return dir, st, nil
}

// cachedTables indexes the tables of the other snapshots fetched into
// destDir (by their manifest.json) by content: size and SHA-256 to path.
func cachedTables(destDir, except string) map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir(destDir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == except {
			continue
		}
		b, err := os.ReadFile(filepath.Join(destDir, e.Name(), manifestName))
		if err != nil {
			continue
		}
		var m Manifest
		if json.Unmarshal(b, &m) != nil || m.SnapshotID != e.Name() {
			continue
		}
		for _, t := range m.Tables {
			if validTableFile(t.File) == nil {
				out[ContentKey(t)] = filepath.Join(destDir, e.Name(), filepath.FromSlash(t.File))
			}
		}
	}
	return out
}

// ContentKey names a table's bytes: two tables with the same key hold the
// same file.
func ContentKey(t TableEntry) string { return fmt.Sprintf("%d:%s", t.Bytes, strings.ToLower(t.SHA256)) }

func fetchTable(ctx context.Context, s store.Store, id string, t TableEntry, dir string, cached map[string]string, st *FetchStats) error {
	if err := validTableFile(t.File); err != nil {
		return fmt.Errorf("publish: fetch table %s: %w", t.Name, err)
	}
	dst := filepath.Join(dir, filepath.FromSlash(t.File))
	if ok, err := fileMatches(dst, t.Bytes, t.SHA256); err != nil {
		return fmt.Errorf("publish: fetch table %s: check cached %s: %w", t.Name, dst, err)
	} else if ok {
		st.Kept += t.Bytes
		return nil
	}
	if src, ok := cached[ContentKey(t)]; ok {
		if linked, err := linkVerified(src, dst, t); err == nil && linked {
			st.Reused += t.Bytes
			return nil
		}
		// A cached copy that does not verify or cannot be linked: download.
	}
	rc, err := s.Get(ctx, tableKey(id, t.File))
	if err != nil {
		return fmt.Errorf("publish: fetch table %s: %w", t.Name, err)
	}
	defer rc.Close()
	hc := newHashCounter()
	// Read at most one byte past the expected size so an oversized object is
	// detected without downloading all of it.
	r := io.TeeReader(io.LimitReader(rc, t.Bytes+1), hc)
	v := &verifyReader{r: r, hc: hc, want: t}
	if err := store.WriteFileAtomic(ctx, dst, v, -1); err != nil {
		if errors.Is(err, store.ErrChecksum) {
			return fmt.Errorf("publish: fetch table %s (%s): %w", t.Name, t.File, errors.Unwrap(err))
		}
		return fmt.Errorf("publish: fetch table %s (%s): %w", t.Name, t.File, err)
	}
	st.Downloaded += t.Bytes
	return nil
}

// linkVerified hard-links src to dst (through a temp name and a rename, so
// dst is whole or as it was) if src holds t's bytes.
func linkVerified(src, dst string, t TableEntry) (bool, error) {
	if ok, err := fileMatches(src, t.Bytes, t.SHA256); err != nil || !ok {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	tmp := filepath.Join(filepath.Dir(dst), fmt.Sprintf("%s%s-link-%d", store.TempPrefix, filepath.Base(dst), time.Now().UnixNano()))
	if err := os.Link(src, tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// verifyReader fails at EOF, before the file is renamed into place, when
// the bytes read do not match the table entry.
type verifyReader struct {
	r    io.Reader
	hc   *hashCounter
	want TableEntry
}

func (v *verifyReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if err == io.EOF {
		if v.hc.n != v.want.Bytes {
			return n, checksumError{fmt.Errorf("size %d, manifest says %d: %w", v.hc.n, v.want.Bytes, store.ErrChecksum)}
		}
		if got := v.hc.sum(); !strings.EqualFold(got, v.want.SHA256) {
			return n, checksumError{fmt.Errorf("sha256 %s, manifest says %s: %w", got, v.want.SHA256, store.ErrChecksum)}
		}
	}
	return n, err
}

// checksumError carries a checksum failure through writeFileAtomic's own
// wrapping so fetchTable can report it plainly.
type checksumError struct{ err error }

func (e checksumError) Error() string { return e.err.Error() }
func (e checksumError) Unwrap() error { return e.err }

// fileMatches reports whether the file at p exists with the given size and
// SHA-256.
func fileMatches(p string, size int64, sha string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return false, nil
	}
	hc := newHashCounter()
	if _, err := io.Copy(hc, f); err != nil {
		return false, err
	}
	return strings.EqualFold(hc.sum(), sha), nil
}

// Snapshot states in a listing.
const (
	StateCurrent   = "current"   // the pointer names it
	StatePublished = "published" // the pointer named it once
	StateOrphan    = "orphan"    // complete, but its publish stopped before the pointer moved: never served
)

// Listed is a complete snapshot (one with a manifest) and its state.
type Listed struct {
	Manifest
	State string
}

// ListSnapshots returns the published snapshots (current or once current),
// oldest first by CreatedAt. Orphans are left out: see ListAll.
func ListSnapshots(ctx context.Context, s store.Store) ([]Manifest, error) {
	all, err := ListAll(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, l := range all {
		if l.State != StateOrphan {
			out = append(out, l.Manifest)
		}
	}
	return out, nil
}

// ListAll returns every snapshot with a manifest and its state, oldest
// first by CreatedAt.
func ListAll(ctx context.Context, s store.Store) ([]Listed, error) {
	objs, err := s.List(ctx, snapshotsPrefix)
	if err != nil {
		return nil, fmt.Errorf("publish: list snapshots: %w", err)
	}
	current := ""
	switch p, err := ReadPointer(ctx, s); {
	case err == nil:
		current = p.SnapshotID
	case !errors.Is(err, ErrNoSnapshot):
		return nil, fmt.Errorf("publish: list snapshots: %w", err)
	}
	published := map[string]bool{}
	for _, o := range objs {
		if id, ok := snapshotIDOf(o.Key); ok && o.Key == publishedKey(id) {
			published[id] = true
		}
	}
	var ms []Manifest
	for _, o := range objs {
		id, ok := manifestID(o.Key)
		if !ok {
			continue
		}
		m, err := ReadManifest(ctx, s, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted meanwhile
			}
			return nil, fmt.Errorf("publish: list snapshots: %w", err)
		}
		ms = append(ms, m)
	}
	sortManifests(ms)
	out := make([]Listed, len(ms))
	for i, m := range ms {
		state := StateOrphan
		switch {
		case m.SnapshotID == current:
			state = StateCurrent
		case published[m.SnapshotID]:
			state = StatePublished
		}
		out[i] = Listed{Manifest: m, State: state}
	}
	return out, nil
}

func sortManifests(ms []Manifest) {
	sort.SliceStable(ms, func(i, j int) bool {
		if !ms[i].CreatedAt.Equal(ms[j].CreatedAt) {
			return ms[i].CreatedAt.Before(ms[j].CreatedAt)
		}
		return ms[i].SnapshotID < ms[j].SnapshotID
	})
}

// manifestID returns the snapshot id when key is snapshots/<id>/manifest.json.
func manifestID(key string) (string, bool) {
	id, ok := snapshotIDOf(key)
	if !ok || key != manifestKey(id) {
		return "", false
	}
	return id, true
}

// snapshotIDOf returns <id> when key is snapshots/<id>/<something>.
func snapshotIDOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, snapshotsPrefix)
	if !ok {
		return "", false
	}
	id, tail, ok := strings.Cut(rest, "/")
	if !ok || tail == "" || validSnapshotID(id) != nil {
		return "", false
	}
	return id, true
}

// CleanOptions controls Clean.
type CleanOptions struct {
	// Retention is the age after which a snapshot may be removed.
	Retention time.Duration
	// Keep is how many of the newest complete snapshots are always kept.
	Keep int
	// Now is the reference time; zero means time.Now().
	Now time.Time
}

// Clean removes snapshots older than o.Now-o.Retention, judged by the
// manifest's CreatedAt or, for partial uploads without a manifest, by the
// newest object's ModTime. The snapshot the pointer names and the o.Keep
// newest complete snapshots are always kept. Each snapshot's manifest is
// deleted first, so a half-deleted snapshot is already invisible. Only keys
// under "snapshots/" are touched; in a local store, temp files left by a
// killed writer an hour or more ago are removed too (SweepTemp). Clean
// returns the removed ids, sorted.
func Clean(ctx context.Context, s store.Store, o CleanOptions) ([]string, error) {
	if o.Retention < 0 {
		return nil, fmt.Errorf("publish: clean: negative retention %s", o.Retention)
	}
	if o.Keep < 0 {
		return nil, fmt.Errorf("publish: clean: negative keep %d", o.Keep)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	cutoff := now.Add(-o.Retention)
	if l, ok := s.(*store.Local); ok {
		if _, err := store.SweepTemp(l.Dir(), now.Add(-time.Hour)); err != nil {
			return nil, fmt.Errorf("publish: clean: %w", err)
		}
	}

	protected := map[string]bool{}
	p, err := ReadPointer(ctx, s)
	switch {
	case err == nil:
		protected[p.SnapshotID] = true
	case errors.Is(err, ErrNoSnapshot):
	default:
		// Without the pointer we cannot tell what is live; delete nothing.
		return nil, fmt.Errorf("publish: clean: %w", err)
	}

	order, err := listSnapshots(ctx, s, p.SnapshotID)
	if err != nil {
		return nil, fmt.Errorf("publish: clean: %w", err)
	}
	complete, err := readCreated(ctx, s, order)
	if err != nil {
		return nil, fmt.Errorf("publish: clean: %w", err)
	}
	// Keep counts published snapshots only: an orphan was never served,
	// so it must not push a served one out.
	kept := 0
	for _, sn := range complete {
		if kept < o.Keep && sn.published {
			protected[sn.id] = true
			kept++
		}
	}
	var removed []string
	for _, sn := range order {
		if protected[sn.id] || !sn.created.Before(cutoff) {
			continue
		}
		if err := deleteSnapshot(ctx, s, sn); err != nil {
			sort.Strings(removed)
			return removed, err
		}
		removed = append(removed, sn.id)
	}
	sort.Strings(removed)
	return removed, nil
}

// storedSnapshot is what Clean knows of one snapshot folder.
type storedSnapshot struct {
	id        string
	keys      []string
	complete  bool // has a manifest
	published bool // was ever the pointer's (its published marker, or named now)
	created   time.Time
}

// listSnapshots groups the objects under snapshots/ by snapshot, in listing
// order; created is the newest object's ModTime until the manifest says.
func listSnapshots(ctx context.Context, s store.Store, current string) ([]*storedSnapshot, error) {
	objs, err := s.List(ctx, snapshotsPrefix)
	if err != nil {
		return nil, err
	}
	byID := map[string]*storedSnapshot{}
	var order []*storedSnapshot
	for _, obj := range objs {
		id, ok := snapshotIDOf(obj.Key)
		if !ok {
			continue
		}
		sn := byID[id]
		if sn == nil {
			sn = &storedSnapshot{id: id}
			byID[id] = sn
			order = append(order, sn)
		}
		sn.keys = append(sn.keys, obj.Key)
		if obj.Key == manifestKey(id) {
			sn.complete = true
		}
		if obj.Key == publishedKey(id) || id == current {
			sn.published = true
		}
		if !sn.complete && obj.ModTime.After(sn.created) {
			sn.created = obj.ModTime
		}
	}
	return order, nil
}

// readCreated sets each complete snapshot's created time from its manifest
// and returns the complete ones, newest first. A manifest removed meanwhile
// makes its snapshot incomplete (judged by ModTime).
func readCreated(ctx context.Context, s store.Store, order []*storedSnapshot) ([]*storedSnapshot, error) {
	var complete []*storedSnapshot
	for _, sn := range order {
		if !sn.complete {
			continue
		}
		m, err := ReadManifest(ctx, s, sn.id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				sn.complete = false
				continue
			}
			return nil, err
		}
		sn.created = m.CreatedAt
		complete = append(complete, sn)
	}
	sort.SliceStable(complete, func(i, j int) bool {
		if !complete[i].created.Equal(complete[j].created) {
			return complete[i].created.After(complete[j].created)
		}
		return complete[i].id > complete[j].id
	})
	return complete, nil
}

// deleteSnapshot removes one snapshot, its manifest first: from then on the
// snapshot is invisible, however far the rest gets.
func deleteSnapshot(ctx context.Context, s store.Store, sn *storedSnapshot) error {
	if sn.complete {
		if err := s.Delete(ctx, manifestKey(sn.id)); err != nil {
			return fmt.Errorf("publish: clean %s: delete manifest: %w", sn.id, err)
		}
	}
	for _, k := range sn.keys {
		if k == manifestKey(sn.id) {
			continue
		}
		if err := s.Delete(ctx, k); err != nil {
			return fmt.Errorf("publish: clean %s: delete %s: %w", sn.id, k, err)
		}
	}
	return nil
}
