package access

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/eodata/eo/publish"
)

// UsagePrefix is where usage exports land in the store: one Parquet file per
// export run, for billing analytics. It is not part of any snapshot.
const UsagePrefix = "usage/events/"

// usageWatermarkKey records the position of the last exported event.
const usageWatermarkKey = "state/usage_watermark"

var usageSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "key_id", Type: arrow.BinaryTypes.String},
	{Name: "account_id", Type: arrow.BinaryTypes.String},
	{Name: "endpoint", Type: arrow.BinaryTypes.String},
	{Name: "status", Type: arrow.PrimitiveTypes.Int32},
	{Name: "request_id", Type: arrow.BinaryTypes.String},
}, nil)

// ExportUsage writes every usage event recorded since the last export to the
// store as Parquet files of at most batch events, then advances the
// watermark. It returns how many events it exported. The watermark is
// written after the file, so a crash between the two re-exports (never
// loses) the batch; files are named by their position range, so a re-export
// overwrites the same object.
func ExportUsage(ctx context.Context, c Counters, st publish.Store, batch int) (int, error) {
	if batch <= 0 {
		batch = 100000
	}
	after := ""
	if b, err := publish.GetBytes(ctx, st, usageWatermarkKey); err == nil {
		after = string(b)
	} else if !errors.Is(err, publish.ErrNotFound) {
		return 0, fmt.Errorf("access: read usage watermark: %w", err)
	}
	total := 0
	for {
		evs, last, err := c.ReadUsage(ctx, after, batch)
		if err != nil {
			return total, fmt.Errorf("access: read usage: %w", err)
		}
		if len(evs) == 0 {
			return total, nil
		}
		body, err := usageParquet(evs)
		if err != nil {
			return total, err
		}
		key := fmt.Sprintf("%s%s/%s_%s.parquet", UsagePrefix, evs[0].Time.UTC().Format("2006-01-02"),
			safeName(after), safeName(last))
		if err := publish.PutBytes(ctx, st, key, body); err != nil {
			return total, fmt.Errorf("access: export usage: %w", err)
		}
		if err := publish.PutBytes(ctx, st, usageWatermarkKey, []byte(last)); err != nil {
			return total, fmt.Errorf("access: save usage watermark: %w", err)
		}
		total += len(evs)
		after = last
	}
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

func usageParquet(evs []UsageEvent) ([]byte, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, usageSchema)
	defer b.Release()
	for _, ev := range evs {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ev.Time.UTC().UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(ev.KeyID)
		b.Field(2).(*array.StringBuilder).Append(ev.AccountID)
		b.Field(3).(*array.StringBuilder).Append(ev.Endpoint)
		b.Field(4).(*array.Int32Builder).Append(int32(ev.Status))
		b.Field(5).(*array.StringBuilder).Append(ev.RequestID)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(usageSchema, &buf,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
