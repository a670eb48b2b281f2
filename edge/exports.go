package edge

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/view"
)

// The bulk exports: GET /v1/{game}/exports lists the served snapshot's
// customer tables (the Parquet files the pipeline published, internal
// tables left out) and GET /v1/{game}/exports/{table} hands one over: a
// redirect to a presigned URL when the store is S3 (the bytes never pass
// through the edge), else the file streamed from the edge's local copy of
// the snapshot. Only plans with the exports flag reach them (data,
// internal); each is one metered request.

// exportFileRoute is the route of one export's file.
const exportFileRoute = "/v1/:game/exports/:table"

// exportURLExpiry is how long a presigned export URL works.
const exportURLExpiry = 15 * time.Minute

// parquetMIME is the media type of Apache Parquet files.
const parquetMIME = "application/vnd.apache.parquet"

type exportColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

type exportEntry struct {
	Table         string         `json:"table"`
	SnapshotID    string         `json:"snapshot_id"`
	CreatedAt     time.Time      `json:"created_at"`
	SchemaVersion int            `json:"schema_version"`
	Format        string         `json:"format"`
	Rows          int64          `json:"rows"`
	Bytes         int64          `json:"bytes"`
	SHA256        string         `json:"sha256"`
	Columns       []exportColumn `json:"columns"`
	DownloadURL   string         `json:"download_url"`
}

// exportScope refuses a key whose plan does not include the exports, before
// metering (a refused request draws no quota). A sandbox key has been
// refused with sandbox_scope already.
func (s *Server) exportScope(c *fiber.Ctx) error {
	if p := principalOf(c).Plan; !s.exportPlans[p] {
		names := slices.Sorted(maps.Keys(s.exportPlans))
		return apiErr(fiber.StatusForbidden, "plan_scope",
			"the bulk exports are included in the %s plans; this key is on the %s plan", strings.Join(names, " and "), p)
	}
	return c.Next()
}

// exportPlansOf are the plans whose limits include the exports.
func exportPlansOf(plans map[string]access.PlanLimits) map[string]bool {
	out := map[string]bool{}
	for name, pl := range plans {
		if pl.Exports {
			out[name] = true
		}
	}
	return out
}

// listExports serves GET /v1/{game}/exports.
func (s *Server) listExports(c *fiber.Ctx) error {
	m := viewOf(c).Snapshot().Meta
	out := struct {
		Data []exportEntry `json:"data"`
		Meta struct {
			Count      int     `json:"count"`
			NextCursor *string `json:"next_cursor"`
		} `json:"meta"`
	}{Data: make([]exportEntry, 0, len(m.Exports))}
	for _, t := range m.Exports {
		e := exportEntry{Table: t.Name, SnapshotID: m.ID, CreatedAt: m.CreatedAt.UTC(), SchemaVersion: m.SchemaVersion,
			Format: "parquet", Rows: t.Rows, Bytes: t.Bytes, SHA256: t.SHA256, Columns: make([]exportColumn, len(t.Columns)),
			DownloadURL: "/v1/" + c.Params("game") + "/exports/" + t.Name}
		for i, col := range t.Columns {
			e.Columns[i] = exportColumn(col)
		}
		out.Data = append(out.Data, e)
	}
	out.Meta.Count = len(out.Data)
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return sendJSON(c, b)
}

// getExport serves GET /v1/{game}/exports/{table}.
func (s *Server) getExport(c *fiber.Ctx) error {
	m := viewOf(c).Snapshot().Meta
	name := c.Params("table")
	i := slices.IndexFunc(m.Exports, func(t view.ExportTable) bool { return t.Name == name })
	if i < 0 {
		return apiErr(fiber.StatusNotFound, "not_found", "export table %q not found; GET /v1/%s/exports lists the tables",
			name, c.Params("game"))
	}
	t := m.Exports[i]
	if p, ok := s.o.Snapshots.Store.(store.Presigner); ok {
		u, err := p.PresignGet(c.UserContext(), publish.TableKey(m.ID, t.File), exportURLExpiry)
		if err == nil {
			s.metrics.exports.WithLabelValues(t.Name, "presigned").Inc()
			return sendExportLink(c, m, t, u.String())
		}
		// The local copy serves instead (the bucket's region unknown and
		// the store unreachable, say).
		s.log.Warn("export: presign failed; streaming the local copy", "table", name, "err", err)
	}
	return s.streamExport(c, m, t)
}

// sendExportLink answers 302 to the presigned URL, with the link in the
// body for clients that do not follow redirects.
func sendExportLink(c *fiber.Ctx, m view.Meta, t view.ExportTable, url string) error {
	var body struct {
		Data struct {
			Table      string    `json:"table"`
			SnapshotID string    `json:"snapshot_id"`
			URL        string    `json:"url"`
			ExpiresAt  time.Time `json:"expires_at"`
			Bytes      int64     `json:"bytes"`
			SHA256     string    `json:"sha256"`
		} `json:"data"`
	}
	d := &body.Data
	d.Table, d.SnapshotID, d.URL, d.Bytes, d.SHA256 = t.Name, m.ID, url, t.Bytes, t.SHA256
	d.ExpiresAt = time.Now().UTC().Add(exportURLExpiry).Truncate(time.Second)
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderLocation, url)
	c.Set(fiber.HeaderCacheControl, "private, no-store") // the link expires
	c.Status(fiber.StatusFound)
	return sendJSON(c, b)
}

// streamExport sends the table's file from the edge's local copy of the
// snapshot (checked against the manifest's SHA-256 when it was fetched),
// with its SHA-256 as a strong ETag: a matching If-None-Match is a 304.
func (s *Server) streamExport(c *fiber.Ctx, m view.Meta, t view.ExportTable) error {
	etag := `"` + t.SHA256 + `"`
	c.Set(fiber.HeaderETag, etag)
	// The URL names the table, not the snapshot: its bytes change with every
	// swap, so a cache keeps the file and revalidates it with the ETag.
	c.Set(fiber.HeaderCacheControl, cachePolicy)
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && noneMatch([]byte(inm), []byte(t.SHA256)) {
		s.metrics.exports.WithLabelValues(t.Name, "not_modified").Inc()
		return c.SendStatus(fiber.StatusNotModified)
	}
	f, err := os.Open(filepath.Join(m.Dir, filepath.FromSlash(t.File)))
	if err != nil {
		s.log.Error("export: the local copy is gone", "table", t.Name, "snapshot", m.ID, "err", err)
		return apiErr(fiber.StatusServiceUnavailable, "unavailable", "this export is not available on this instance right now; retry")
	}
	c.Set(fiber.HeaderContentType, parquetMIME)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+c.Params("game")+"-"+t.Name+"-"+m.ID+`.parquet"`)
	c.Response().SetBodyStream(f, int(t.Bytes)) // closed by fasthttp once sent
	s.metrics.exports.WithLabelValues(t.Name, "streamed").Inc()
	s.metrics.exportBytes.Add(float64(t.Bytes))
	return nil
}
