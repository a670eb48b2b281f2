package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/publish"
)

// TestExportsListTheCustomerTables: /exports lists exactly the manifest's
// customer tables with its rows, bytes and SHA-256 and each file's
// columns, and /exports/{table} streams a file whose SHA-256 is the
// listed one, with it as ETag (If-None-Match: 304); internal and unknown
// tables are 404.
func TestExportsListTheCustomerTables(t *testing.T) {
	ts := newTestServer(t)
	ptr, err := publish.ReadPointer(context.Background(), ts.store)
	if err != nil {
		t.Fatal(err)
	}
	man, err := publish.ReadManifest(context.Background(), ts.store, ptr.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	r := ts.get(t, "/v1/cs2/exports", opsKey)
	if r.status != 200 {
		t.Fatalf("/exports: %d %s", r.status, r.body)
	}
	rows := r.data(t)
	listed := map[string]map[string]any{}
	for _, row := range rows {
		e := row.(map[string]any)
		listed[e["table"].(string)] = e
	}
	var internal []string
	customer := 0
	for _, te := range man.Tables {
		e, ok := listed[te.Name]
		if te.Internal {
			internal = append(internal, te.Name)
			if ok {
				t.Errorf("internal table %s is listed", te.Name)
			}
			continue
		}
		customer++
		if !ok {
			t.Errorf("table %s is not listed", te.Name)
			continue
		}
		if e["rows"].(float64) != float64(te.Rows) || e["bytes"].(float64) != float64(te.Bytes) || e["sha256"] != te.SHA256 ||
			e["snapshot_id"] != man.SnapshotID || e["download_url"] != "/v1/cs2/exports/"+te.Name || e["format"] != "parquet" {
			t.Errorf("table %s: listed %v, manifest %+v", te.Name, e, te)
		}
		if cols, _ := e["columns"].([]any); len(cols) == 0 {
			t.Errorf("table %s lists no columns", te.Name)
		}
	}
	if len(rows) != customer || len(internal) == 0 {
		t.Fatalf("%d tables listed, the manifest has %d customer and %d internal tables", len(rows), customer, len(internal))
	}
	var idType any
	for _, c := range listed["matches"]["columns"].([]any) {
		if c := c.(map[string]any); c["name"] == "id" {
			idType = c["type"]
		}
	}
	if idType != "utf8" {
		t.Errorf("matches.id has type %v, want utf8 (ids are text)", idType)
	}

	f := ts.get(t, "/v1/cs2/exports/matches", opsKey)
	sum := sha256.Sum256(f.body)
	want := listed["matches"]["sha256"].(string)
	if f.status != 200 || f.header.Get("Content-Type") != parquetMIME || hex.EncodeToString(sum[:]) != want ||
		f.header.Get("ETag") != `"`+want+`"` || f.header.Get("Content-Encoding") != "" ||
		f.header.Get("Cache-Control") != cachePolicy { // the URL's bytes change with the snapshot: never immutable
		t.Fatalf("/exports/matches: %d %v, sha256 %x (listed %s)", f.status, f.header, sum, want)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/cs2/exports/matches", nil)
	req.Header.Set("Authorization", "Bearer "+opsKey)
	req.Header.Set("If-None-Match", `"`+want+`"`)
	req.Header.Set("Accept-Encoding", "gzip")
	nm, err := ts.App().Test(req, 10000) // not ts.do: a 304 has no error envelope
	if err != nil {
		t.Fatal(err)
	}
	nb, _ := io.ReadAll(nm.Body)
	nm.Body.Close()
	if nm.StatusCode != 304 || len(nb) != 0 || nm.Header.Get("ETag") != `"`+want+`"` {
		t.Fatalf("If-None-Match with the file's tag: %d (%d bytes) %v", nm.StatusCode, len(nb), nm.Header)
	}
	mb := ts.get(t, "/metrics", opsKey).body
	for series, want := range map[string]float64{`eo_exports_total{handover="streamed",table="matches"}`: 1,
		`eo_exports_total{handover="not_modified",table="matches"}`: 1, "eo_export_streamed_bytes_total": float64(len(f.body))} {
		if v, ok := proctest.MetricValue(string(mb), series); !ok || v != want {
			t.Errorf("/metrics %s = %v (%v), want %v", series, v, ok, want)
		}
	}
	for _, name := range append(internal, "nope") {
		if r := ts.get(t, "/v1/cs2/exports/"+name, opsKey); r.status != 404 || r.code(t) != "not_found" {
			t.Errorf("/exports/%s: %d %s", name, r.status, r.body)
		}
	}
}

// TestExportsArePlanScopedAndMetered: data and internal keys reach the
// exports, each request drawing one unit of quota; a standard key gets 403
// plan_scope and a sandbox key 403 sandbox_scope, neither drawing any.
func TestExportsArePlanScopedAndMetered(t *testing.T) {
	ms, keys := embeddedMeteredServer(t)
	data, std, sandbox := newTestKey(t, keys, access.PlanData), newTestKey(t, keys, access.PlanStandard),
		newTestKey(t, keys, access.PlanSandbox)
	quota := func(r result) int {
		n, err := strconv.Atoi(r.header.Get("X-Quota-Remaining"))
		if err != nil {
			t.Fatalf("X-Quota-Remaining %q", r.header.Get("X-Quota-Remaining"))
		}
		return n
	}
	first := ms.get(t, "/v1/cs2/exports", data)
	if first.status != 200 {
		t.Fatalf("data plan: %d %s", first.status, first.body)
	}
	file := ms.get(t, "/v1/cs2/exports/teams", data)
	if file.status != 200 || quota(file) != quota(first)-1 {
		t.Fatalf("data plan file: %d, quota %s after %s", file.status, file.header.Get("X-Quota-Remaining"),
			first.header.Get("X-Quota-Remaining"))
	}
	for _, c := range []struct{ key, code string }{{std, "plan_scope"}, {sandbox, "sandbox_scope"}} {
		for _, path := range []string{"/v1/cs2/exports", "/v1/cs2/exports/teams"} {
			if r := ms.get(t, path, c.key); r.status != 403 || r.code(t) != c.code || r.header.Get("X-Quota-Remaining") != "" {
				t.Errorf("%s with a %s key: %d %s %v", path, c.code, r.status, r.body, r.header.Get("X-Quota-Remaining"))
			}
		}
	}
	// The standard key's refused requests drew nothing: its first metered
	// request has the whole quota less one.
	if r := ms.get(t, "/v1/cs2/teams?limit=1", std); quota(r) != int(access.DefaultPlans()[access.PlanStandard].MonthlyQuota)-1 {
		t.Fatalf("standard key after two refused exports: quota %s", r.header.Get("X-Quota-Remaining"))
	}
	if !slices.Equal(slices.Sorted(maps.Keys(ms.exportPlans)), []string{access.PlanData, access.PlanInternal}) {
		t.Fatalf("plans with the exports: %v", ms.exportPlans)
	}
}
