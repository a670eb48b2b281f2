package access

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/eodata/eo/store"
)

// UsagePrefix is where usage exports land in the store, one Parquet file per
// batch, for billing analytics: usage/events/<day>/<source>/<after>_<last>.parquet,
// where <source> is the counters backend's UsageSource id and the positions
// are that source's. It is not part of any snapshot.
const UsagePrefix = "usage/events/"

// usageWatermarkPrefix holds one watermark per source:
// state/usage_watermarks/<source> (not under state/usage_watermark/: on a
// local store that name is the file of the old single watermark).
// usageLegacyWatermark is the store-wide watermark of earlier versions,
// adopted once (see UsageSource).
const (
	usageWatermarkPrefix = "state/usage_watermarks/"
	usageLegacyWatermark = "state/usage_watermark"
)

// ExportLockTTL is how long an exporter holds the source's lock without
// renewing it (it renews before every batch).
const ExportLockTTL = 2 * time.Minute

// DefaultExportBatch is the most events one export file holds.
const DefaultExportBatch = 100000

// watermark is a source's export state in the store.
type watermark struct {
	Source string `json:"source"`
	// Pos is the last exported position ("" = none yet).
	Pos string `json:"pos"`
	// PendingTo and PendingFile record a batch being exported: the events
	// in (Pos, PendingTo] go to PendingFile. Written before the file, so an
	// export that stops in between is redone exactly, to the same file.
	PendingTo   string `json:"pending_to,omitempty"`
	PendingFile string `json:"pending_file,omitempty"`
	// Digest and PendingDigest identify the events at Pos and PendingTo
	// (eventDigest), so that a log restored from an older copy, which
	// hands those positions to other events, is told apart (see rewound).
	// Empty in watermarks written before they were kept.
	Digest        string    `json:"digest,omitempty"`
	PendingDigest string    `json:"pending_digest,omitempty"`
	Updated       time.Time `json:"updated"`
}

var usageSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "key_id", Type: arrow.BinaryTypes.String},
	{Name: "account_id", Type: arrow.BinaryTypes.String},
	{Name: "endpoint", Type: arrow.BinaryTypes.String},
	{Name: "status", Type: arrow.PrimitiveTypes.Int32},
	{Name: "request_id", Type: arrow.BinaryTypes.String},
}, nil)

// ExportUsage writes every usage event recorded since the last export to the
// store as Parquet files of at most batch events, advances the source's
// watermark, and then prunes the exported events from the counters backend.
// It returns how many events it exported.
//
// Guarantee: every recorded event lands in exactly one export file.
//   - The watermark is per source (UsageSource), so a new counters.db or an
//     emptied Redis starts from its own beginning, and hosts never share
//     positions or file names.
//   - Each batch is announced in the watermark (its range and file name)
//     before its file is written, and the watermark advances after: an
//     export that stops in between (crash, store error) is redone by the
//     next run with exactly the same events to the same file name, which
//     overwrites the first attempt.
//   - Exporters of one source take its export lock (Redis: SET NX PX under
//     the prefix, renewed before every batch; embedded: one process holds
//     the database); a second exporter gets ErrExportBusy and does nothing.
//     An exporter that loses its lock (stalled past ExportLockTTL) stops
//     before it advances the watermark.
//   - Events are pruned only after the watermark that covers them is saved,
//     so pruning never loses an unexported event.
//
// A counters.db restored from an older copy (a backup, a copied work
// folder, a virtual machine rolled back) keeps its source id but counts its
// positions again from where the copy stopped, so the positions the
// watermark covers go to new events. The export checks the events at the
// watermark's positions (their digest is kept in it) and, when they differ
// or were never reached, gives the database a new source id and exports
// every event it holds under it: the copy's events that were exported
// before appear a second time, with their request ids; none is lost.
//
// The one window left: an exporter stalled longer than ExportLockTTL
// between its lock check and its watermark write can move the watermark
// back, and the events after it are then exported a second time (to other
// file names). Every event has a unique request_id, so the billing side can
// always de-duplicate; it never loses one.
func ExportUsage(ctx context.Context, c UsageLog, st store.Store, batch int) (int, error) {
	return exportUsage(ctx, c, st, batch, nil, slog.Default())
}

// exportUsage is ExportUsage with its reading and writing paced by p (nil:
// as fast as it can).
func exportUsage(ctx context.Context, c UsageLog, st store.Store, batch int, p *pacer, lg *slog.Logger) (int, error) {
	if batch <= 0 {
		batch = DefaultExportBatch
	}
	src, err := c.UsageSource(ctx)
	if err != nil {
		return 0, err
	}
	lock, err := c.LockExport(ctx, ExportLockTTL)
	if err != nil {
		return 0, err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	wmKey := usageWatermarkPrefix + src.ID
	wm, err := loadWatermark(ctx, st, wmKey, src)
	if err != nil {
		return 0, err
	}
	if src, wm, err = renewIfRewound(ctx, c, src, wm, lg); err != nil {
		return 0, err
	}
	wmKey = usageWatermarkPrefix + src.ID
	// Events a previous run exported but did not prune (it stopped after
	// saving the watermark), or exported by an earlier version.
	if wm.Pos != "" {
		if _, err := c.PruneUsage(ctx, wm.Pos); err != nil {
			return 0, err
		}
	}
	total := 0
	uw := &usageWriter{pace: p}
	for {
		if err := lock.Extend(ctx); err != nil {
			return total, err
		}
		var evs []UsageEvent
		if wm.PendingTo != "" {
			// Redo the batch an earlier run announced, exactly.
			if evs, _, err = uw.read(ctx, c, wm.Pos, wm.PendingTo, math.MaxInt32); err != nil {
				return total, fmt.Errorf("access: read usage: %w", err)
			}
		} else {
			var last string
			if evs, last, err = uw.read(ctx, c, wm.Pos, "", batch); err != nil {
				return total, fmt.Errorf("access: read usage: %w", err)
			}
			if len(evs) == 0 {
				return total, nil
			}
			wm.PendingTo, wm.PendingDigest = last, eventDigest(evs[len(evs)-1])
			wm.PendingFile = fmt.Sprintf("%s%s/%s/%s_%s.parquet", UsagePrefix, evs[0].Time.UTC().Format("2006-01-02"),
				src.ID, safeName(wm.Pos), safeName(last))
			if err := saveWatermark(ctx, st, wmKey, wm); err != nil {
				return total, err
			}
		}
		if len(evs) > 0 {
			body, err := uw.parquet(ctx, evs)
			if err != nil {
				return total, err
			}
			if err := store.PutBytes(ctx, st, wm.PendingFile, body); err != nil {
				return total, fmt.Errorf("access: export usage: %w", err)
			}
		}
		// Only the lock holder moves the watermark.
		if err := lock.Extend(ctx); err != nil {
			return total, err
		}
		wm = watermark{Source: src.ID, Pos: wm.PendingTo, Digest: wm.PendingDigest}
		if err := saveWatermark(ctx, st, wmKey, wm); err != nil {
			return total, err
		}
		total += len(evs)
		if _, err := c.PruneUsage(ctx, wm.Pos); err != nil {
			return total, err
		}
		if len(evs) < batch {
			// Caught up with what was there: the events recorded since
			// wait for the next run (under load, chasing them would write
			// a stream of tiny files and never return).
			return total, nil
		}
	}
}

// loadWatermark reads the source's watermark. A source without one starts
// from its beginning, unless it is a legacy source and the old store-wide
// watermark can be its own (at or before the last position it held then).
func loadWatermark(ctx context.Context, st store.Store, key string, src UsageSource) (watermark, error) {
	wm := watermark{Source: src.ID}
	b, err := store.GetBytes(ctx, st, key)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &wm); err != nil {
			return wm, fmt.Errorf("access: usage watermark %s: %w", key, err)
		}
		return wm, nil
	case !errors.Is(err, store.ErrNotFound):
		return wm, fmt.Errorf("access: read usage watermark: %w", err)
	}
	if src.LegacyUpTo == "" {
		return wm, nil
	}
	b, err = store.GetBytes(ctx, st, usageLegacyWatermark)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return wm, nil
	case err != nil:
		return wm, fmt.Errorf("access: read usage watermark: %w", err)
	}
	if old := strings.TrimSpace(string(b)); comparePos(old, src.LegacyUpTo) <= 0 {
		wm.Pos = old
	}
	return wm, nil
}

// positionLog is a usage log whose positions are a counter kept in the log
// itself (the embedded database), so that a copy restored from before an
// export hands positions already exported to new events. A Redis stream's
// positions are times: new events land after every exported one.
type positionLog interface {
	// usageAt returns the event at pos, if the log holds it, and whether
	// pos was ever given out.
	usageAt(ctx context.Context, pos string) (ev UsageEvent, held, given bool, err error)
	// renewSource gives the log a new source id.
	renewSource(ctx context.Context) (UsageSource, error)
}

// renewIfRewound gives c a new source when it no longer holds the events
// wm records as exported (rewound), and returns the source and watermark
// to export with: the new source from its start, or src and wm unchanged.
func renewIfRewound(ctx context.Context, c UsageLog, src UsageSource, wm watermark, lg *slog.Logger) (UsageSource, watermark, error) {
	pl, ok := c.(positionLog)
	if !ok {
		return src, wm, nil
	}
	why, err := rewound(ctx, pl, wm)
	if err != nil || why == "" {
		return src, wm, err
	}
	renewed, err := pl.renewSource(ctx)
	if err != nil {
		return src, wm, err
	}
	lg.Warn("usage export: the counters database is behind what its source exported, as when it is restored from an older copy; "+
		"its events are exported under a new source, and those exported before the copy was restored appear twice (same request_id)",
		"source", src.ID, "new_source", renewed.ID, "why", why)
	return renewed, watermark{Source: renewed.ID}, nil
}

// rewound says why l no longer holds the events wm records as exported
// there ("" when it does, or cannot tell: a watermark without digests).
// A pruned position is fine: only the exporter prunes, after its watermark.
func rewound(ctx context.Context, l positionLog, wm watermark) (string, error) {
	for _, at := range [...]struct{ pos, digest string }{{wm.Pos, wm.Digest}, {wm.PendingTo, wm.PendingDigest}} {
		if at.pos == "" {
			continue
		}
		ev, held, given, err := l.usageAt(ctx, at.pos)
		switch {
		case err != nil:
			return "", err
		case !given:
			return fmt.Sprintf("position %s is exported but the database has not reached it", at.pos), nil
		case held && at.digest != "" && eventDigest(ev) != at.digest:
			return fmt.Sprintf("position %s holds another event than the one exported there", at.pos), nil
		}
	}
	return "", nil
}

// eventDigest identifies an event by its content: 16 hex digits of its
// fields' FNV-1a hash.
func eventDigest(ev UsageEvent) string {
	h := fnv.New64a()
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(ev.Time.UnixNano()))
	binary.BigEndian.PutUint32(b[8:], uint32(ev.Status))
	h.Write(b[:])
	for _, s := range [...]string{ev.KeyID, ev.AccountID, ev.Endpoint, ev.RequestID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

func saveWatermark(ctx context.Context, st store.Store, key string, wm watermark) error {
	wm.Updated = time.Now().UTC()
	b, _ := json.Marshal(wm)
	if err := store.PutBytes(ctx, st, key, b); err != nil {
		return fmt.Errorf("access: save usage watermark: %w", err)
	}
	return nil
}

func safeName(pos string) string {
	if pos == "" {
		return "start"
	}
	b := []byte(pos)
	for i, ch := range b {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			b[i] = '-'
		}
	}
	return string(b)
}

// usageWriter reads batches of events and turns them into Parquet files,
// paced by pace. One is made per export and reused for its batches: the
// file goes to a buffer kept from batch to batch (Store.Put reads it before
// returning): grown anew for each batch, it would be garbage whose
// collector cycles take their mark assists from the goroutines serving
// requests.
type usageWriter struct {
	pace *pacer
	buf  bytes.Buffer
}

// exportChunk is how many values of one column an export writes in one
// step (a tenth of a millisecond of work or so); the pacer runs between
// steps. The embedded backend's read yields the processor
// (runtime.Gosched) every exportChunk events it decodes.
const exportChunk = 512

// read reads up to max events after `after` (and up to upto, when set) in
// one step: reading in steps cost a quarter more an event (a flush and a
// seek each, and the batch copied together).
func (uw *usageWriter) read(ctx context.Context, c UsageLog, after, upto string, max int) ([]UsageEvent, string, error) {
	evs, last, err := c.ReadUsageRange(ctx, after, upto, max)
	if err == nil {
		err = uw.pace.step(ctx)
	}
	return evs, last, err
}

// usagePQSchema is usageSchema as a Parquet schema, and usageProps the
// properties of an export file: zstd at level 1, no dictionaries (each
// column written plain was smaller and cheaper), 256 KiB data pages: less
// garbage than the default 1 MiB (a page's buffer grows by doubling, and
// large buffers are zeroed), where smaller pages give zstd less to reuse
// (BenchmarkExportUsage).
var (
	usageProps = parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(1), parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(256<<10))
	usagePQSchema = func() *schema.Schema {
		sc, err := pqarrow.ToParquet(usageSchema, usageProps, pqarrow.DefaultWriterProps())
		if err != nil {
			panic(err) // a fixed schema: fails at start, in every test
		}
		return sc
	}()
)

// parquet returns the Parquet file of evs (one row group); the bytes are
// valid until the next call.
//
// It writes Parquet's column chunks directly, not through Arrow: building an
// Arrow record copied every string once more and pqarrow then converted each
// column back to Parquet values, a third of an export's time. The file is
// the same (the Arrow schema's Parquet schema, the same properties).
func (uw *usageWriter) parquet(ctx context.Context, evs []UsageEvent) ([]byte, error) {
	uw.buf.Reset()
	w := file.NewParquetWriter(&uw.buf, usagePQSchema.Root(), file.WithWriterProps(usageProps))
	rg := w.AppendRowGroup()
	var (
		times  [exportChunk]int64
		status [exportChunk]int32
		vals   [exportChunk]parquet.ByteArray
	)
	for col := range usageSchema.NumFields() {
		cw, err := rg.NextColumn()
		if err != nil {
			_ = w.Close()
			return nil, err
		}
		for rest := evs; len(rest) > 0 && err == nil; {
			n := min(len(rest), exportChunk)
			chunk := rest[:n]
			rest = rest[n:]
			switch cw := cw.(type) {
			case *file.Int64ColumnChunkWriter: // time
				for i, ev := range chunk {
					times[i] = ev.Time.UnixMicro()
				}
				_, err = cw.WriteBatch(times[:n], nil, nil)
			case *file.Int32ColumnChunkWriter: // status
				for i, ev := range chunk {
					status[i] = int32(ev.Status)
				}
				_, err = cw.WriteBatch(status[:n], nil, nil)
			case *file.ByteArrayColumnChunkWriter:
				for i := range chunk {
					vals[i] = stringBytes(usageString(&chunk[i], col))
				}
				_, err = cw.WriteBatch(vals[:n], nil, nil)
			default:
				err = fmt.Errorf("access: usage column %d: unexpected writer %T", col, cw)
			}
			if err == nil {
				err = uw.pace.step(ctx)
			}
		}
		if err == nil {
			err = cw.Close()
		}
		if err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return uw.buf.Bytes(), nil
}

// usageString is ev's string field in column col of usageSchema.
func usageString(ev *UsageEvent, col int) string {
	switch col {
	case 1:
		return ev.KeyID
	case 2:
		return ev.AccountID
	case 3:
		return ev.Endpoint
	}
	return ev.RequestID
}

// stringBytes is s's bytes without a copy, for the Parquet writer, which
// only reads them (it copies them into its page).
func stringBytes(s string) parquet.ByteArray { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// pacer keeps an export to a share of one processor's time while the edge
// serves: after each step it sleeps long enough that the step's work is at
// most Duty of the time since the previous one.
//
// The export runs beside the goroutines serving requests, and a goroutine
// that does not block keeps its processor for a whole scheduler slice each
// time it gets one: unpaced, a batch would hold a processor for long
// enough that requests queue behind it. Paced, the same work is spread over
// a few times as long, a few milliseconds at a time.
type pacer struct {
	duty float64
	mark time.Time
}

// newPacer paces at duty (0 < duty < 1; otherwise nil: no pacing).
func newPacer(duty float64) *pacer {
	if duty <= 0 || duty >= 1 {
		return nil
	}
	return &pacer{duty: duty, mark: time.Now()}
}

// pause is the sleep after a step of work that took `work`.
func (p *pacer) pause(work time.Duration) time.Duration {
	return time.Duration(float64(work) * (1/p.duty - 1))
}

// step ends a step of work: it sleeps for the pause that keeps the work at
// p.duty of the time, or returns ctx's error if ctx ends first.
func (p *pacer) step(ctx context.Context) error {
	if p == nil {
		return ctx.Err()
	}
	t := time.NewTimer(p.pause(time.Since(p.mark)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	p.mark = time.Now()
	return nil
}
