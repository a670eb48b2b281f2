package pipelines

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	eosql "github.com/eodata/eo/sql"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
)

// export writes each changed table to Parquet from the state: a segmented
// table whose segments changed is a patch of the previous run's file (the
// changed segments' rows put in, the rest copied), any other changed table
// is written whole, and an unchanged one is the previous run's file. On a
// new state every table is written whole.
func (r *run) export(ctx context.Context) (int64, error) {
	if !r.all {
		r.releaseCache(ctx) // a new state's export reads every table: the cache is what it reads
	}
	replace, err := r.scopeSegments(ctx)
	if err != nil {
		return 0, err
	}
	// The deltas are exported one table after the other (one DuckDB
	// connection); the patches, Go only, run one per core.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var patched []*patchJob
	var total int64
	for _, name := range OutputTables {
		prev, path := r.prevFile(name), filepath.Join(r.outDir, name+".parquet")
		seg, patchable := segments[name]
		if r.model && slices.Contains(modelTables, name) {
			patchable = false // rows of matches outside the scope changed too
		}
		switch {
		case prev != "" && !r.changed[name]:
			rows, err := r.count(ctx, "st.out_"+name)
			if err != nil {
				return total, err
			}
			if err := linkOrCopy(prev, path); err != nil {
				return total, err
			}
			r.addTable(name, path, rows)
		case prev != "" && patchable:
			rep := replace[len(seg)]
			if r.segs["out_"+name] {
				if rep, err = r.segmentKeys(ctx, changedSegTable("out_"+name), seg); err != nil {
					return total, err
				}
			}
			j, err := r.exportDelta(ctx, name)
			if err != nil {
				return total, err
			}
			patched = append(patched, j)
			g.Go(func() error {
				res, err := tables.PatchParquet(gctx, prev, j.delta, j.path, seg, rep)
				if err != nil {
					return fmt.Errorf("patch %s: %w", name, err)
				}
				j.rows = res.Rows
				r.logPatch(name, len(rep), res)
				return nil
			})
		default:
			n, err := r.exportTable(ctx, name)
			if err != nil {
				return total, err
			}
			total += n
		}
	}
	if err := g.Wait(); err != nil {
		return total, err
	}
	for _, j := range patched {
		total += j.rows
		r.addTable(j.name, j.path, j.rows)
	}
	return total, nil
}

// addTable records a published table's file in the report.
func (r *run) addTable(name, path string, rows int64) {
	r.rep.Tables = append(r.rep.Tables, publish.TableFile{Name: name, Path: path, Rows: rows, Internal: InternalTables[name]})
	sort.Slice(r.rep.Tables, func(i, j int) bool { return r.rep.Tables[i].Name < r.rep.Tables[j].Name })
	if r.changed[name] || r.all {
		r.rep.Changed = append(r.rep.Changed, name)
		slices.Sort(r.rep.Changed)
	}
}

// exportTable writes st.out_<name> to the run's folder in the table's row
// order. A table the export patches is cut into the row groups of a patch
// (tables.PatchRowGroup): the next run's patch copies those it does not
// touch and rewrites a few small groups.
func (r *run) exportTable(ctx context.Context, name string) (int64, error) {
	path := filepath.Join(r.outDir, name+".parquet")
	groupRows := 122880
	if segments[name] != nil {
		groupRows = tables.PatchRowGroup
	}
	if err := r.copyOut(ctx, name, "true", path, groupRows); err != nil {
		return 0, err
	}
	n, err := r.count(ctx, "st.out_"+name)
	r.addTable(name, path, n)
	return n, err
}

// copyOut writes the rows of st.out_<name> where pred holds (on alias t) to
// path in the table's row order, ids as text.
func (r *run) copyOut(ctx context.Context, name, pred, path string, groupRows int) error {
	cols, err := r.idColumns(ctx, "st", "out_"+name)
	if err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	if err := r.do(ctx, "export/copy.sql", map[string]any{"Table": "out_" + name, "IDs": cols, "Pred": pred,
		"Order": orderBy[name], "Path": path, "Group": groupRows}); err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	return nil
}

// idColumns are the UUID columns (and lists of them) of a state table,
// published as their canonical text (SNAPSHOT.md, Types): a string filter
// on an id works the same in DuckDB, Polars and pyarrow, which read a
// 16-byte UUID as opaque binary.
func (r *run) idColumns(ctx context.Context, catalog, table string) ([]idColumn, error) {
	return query(ctx, r, "export/id_columns.sql", map[string]string{"Catalog": catalog, "Table": table}, nil,
		func(c *idColumn) []any { return []any{&c.Name, &c.List} })
}

type idColumn struct {
	Name string
	List bool
}

// patchJob is one table the export patches: the scope's rows (delta),
// the file it writes (path) and, once written, its rows.
type patchJob struct {
	name, delta, path string
	rows              int64
}

// exportDelta exports the state's rows of the changed segments of a table
// (of the scope, when the merge did not compare segments) to a file of its
// own in the table's order: what a patch puts into the previous run's file.
func (r *run) exportDelta(ctx context.Context, name string) (*patchJob, error) {
	dir := filepath.Join(r.o.WorkDir, "scope-delta")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	j := &patchJob{name: name, delta: filepath.Join(dir, name+".parquet"), path: filepath.Join(r.outDir, name+".parquet")}
	pred := scopePred(name)
	if r.segs["out_"+name] {
		q, err := inChanged("out_"+name, segments[name])
		if err != nil {
			return nil, err
		}
		pred = q
	}
	return j, r.copyOut(ctx, name, pred, j.delta, 122880)
}

// inChanged is the predicate on a row t of table: its segment is one the
// merge found changed.
func inChanged(table string, seg []string) (string, error) {
	q, err := eosql.Render("export/in_changed.sql", map[string]any{"Changed": changedSegTable(table), "Seg": seg}, nil)
	return trimSemicolon(q), err
}

// scopePred is the predicate selecting a published table's scope rows.
func scopePred(name string) string {
	switch name {
	case "matches":
		return byScopeID
	case "odds_lines":
		return byScopeOdds
	}
	return byScopeMatch
}

// scopeSegments are the segment keys of the scope's rows, by the number
// of segment columns: a match's, and (two columns) a match's or an
// outright tournament's.
func (r *run) scopeSegments(ctx context.Context) (map[int]map[string]bool, error) {
	out := map[int]map[string]bool{1: {}, 2: {}}
	type row struct {
		id    string
		match bool
	}
	rows, err := query(ctx, r, "export/scope_keys.sql", nil, nil, func(x *row) []any { return []any{&x.id, &x.match} })
	for _, x := range rows {
		if x.match {
			out[1][tables.SegmentKey(&x.id)] = true
			out[2][tables.SegmentKey(&x.id, nil)] = true
		} else {
			out[2][tables.SegmentKey(nil, &x.id)] = true
		}
	}
	return out, err
}

// segmentKeys are the segment keys (tables.SegmentKey) of the rows of the
// changed-segments table, whose columns are seg.
func (r *run) segmentKeys(ctx context.Context, table string, seg []string) (map[string]bool, error) {
	rows, err := query(ctx, r, "export/segment_keys.sql", map[string]any{"Table": table, "Seg": seg}, nil,
		func(x *[2]sql.NullString) []any { return []any{&x[0], &x[1]} })
	out := map[string]bool{}
	for _, x := range rows {
		key := make([]*string, len(seg))
		for i := range seg {
			if x[i].Valid {
				key[i] = &x[i].String
			}
		}
		out[tables.SegmentKey(key...)] = true
	}
	return out, err
}

// logPatch logs what the patch of a table did.
func (r *run) logPatch(table string, segments int, res tables.PatchResult) {
	r.o.Logger.Info("table patched", "run", r.rep.RunID, "table", table, "segments", segments, "row_groups", res.Groups,
		"copied", res.Copied, "encoded_again", res.Coded, "rewritten_whole", res.Rewritten)
}

// defaultPartsChunk is Options.PartsChunk's default: the render holds one
// chunk's rows in Go memory, so a large snapshot is rendered in pieces.
const defaultPartsChunk = 10000

// parts renders the sub-resources of the matches whose part tables
// changed (every match, on a new state) into match_parts, a chunk of
// matches at a time, and puts them into the previous run's file (or links
// that file when no table a part is rendered from changed).
func (r *run) parts(ctx context.Context) (int64, error) {
	out := filepath.Join(r.outDir, tables.MatchPartsTable+".parquet")
	prev := r.prevFile(tables.MatchPartsTable)
	sources := append(slices.Clone(tables.PartSources), "match_events")
	if prev != "" && !slices.ContainsFunc(sources, func(t string) bool { return r.changed[t] }) {
		if err := linkOrCopy(prev, out); err != nil {
			return 0, err
		}
		var n int64
		err := r.value(ctx, "export/file_rows.sql", out, &n)
		r.addTable(tables.MatchPartsTable, out, n)
		return n, err
	}
	r.changed[tables.MatchPartsTable] = true
	// The matches whose parts can have changed: those whose rows changed
	// in a source table, or, if a source changed otherwise, every match of
	// the scope.
	var from []string
	for _, t := range sources {
		if !r.changed[t] {
			continue
		}
		if !r.segs["out_"+t] {
			from = nil
			break
		}
		from = append(from, changedSegTable("out_"+t))
	}
	if err := r.do(ctx, "export/parts_scope.sql", map[string]any{"From": from, "Chunk": cmp.Or(r.o.PartsChunk, defaultPartsChunk)}); err != nil {
		return 0, err
	}
	dirs, err := r.partChunks(ctx, sources)
	if err != nil {
		return 0, err
	}
	replace, err := r.partsScope(ctx)
	if err != nil {
		return 0, err
	}
	// The state is written and DuckDB's cache goes before the parts render
	// in Go (a soft limit on the Go heap: the collector runs harder near it).
	if err := r.do(ctx, "merge/checkpoint.sql", nil); err != nil {
		return 0, err
	}
	r.releaseCache(ctx)
	if lim := byteSize(r.o.MemoryLimit); lim > 0 && r.budget.goPrev < 0 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(lim))
	}
	delta := filepath.Join(r.partsDir(), tables.MatchPartsTable+".parquet")
	n, err := tables.WriteMatchPartsOf(ctx, dirs, delta)
	if err != nil {
		return 0, err
	}
	res := tables.PatchResult{Rows: n}
	if prev == "" {
		err = os.Rename(delta, out)
	} else if res, err = tables.PatchMatchParts(ctx, prev, delta, out, replace); err == nil {
		r.logPatch(tables.MatchPartsTable, len(replace), res)
	}
	debug.FreeOSMemory() // the heap the render grew, before the state's last checkpoint
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(r.partsDir()); err != nil {
		return 0, err
	}
	r.addTable(tables.MatchPartsTable, out, res.Rows)
	return res.Rows, nil
}

func (r *run) partsDir() string { return filepath.Join(r.o.WorkDir, "parts") }

// partChunks writes the part tables' rows of the matches in parts_scope,
// one folder per chunk of matches (in match id order), for the render. A
// run that continues the state has the scope's rows in memory; one whose
// scope is everything reads the files the export wrote (ordered by match:
// a chunk's range reads its own row groups), or, in one chunk, renders
// from them as they are.
func (r *run) partChunks(ctx context.Context, sources []string) ([]string, error) {
	if err := resetDir(r.partsDir()); err != nil {
		return nil, err
	}
	type chunk struct {
		k      int64
		lo, hi string // the chunk's first match id, and the next chunk's ("": none)
	}
	chunks, err := query(ctx, r, "export/parts_chunks.sql", nil, nil, func(c *chunk) []any { return []any{&c.k, &c.lo, &c.hi} })
	if err != nil {
		return nil, err
	}
	if r.all && len(chunks) == 1 {
		return []string{r.outDir}, nil
	}
	var dirs []string
	for _, c := range chunks {
		dir := filepath.Join(r.partsDir(), strconv.FormatInt(c.k, 10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for _, t := range sources {
			d := map[string]any{"Table": "out_" + t, "File": "", "Order": orderBy[t], "Path": filepath.Join(dir, t+".parquet"),
				"Pred": scopeRows("parts_chunk", c.k), "IDs": []idColumn(nil)}
			if r.all {
				d["File"], d["Pred"] = filepath.Join(r.outDir, t+".parquet"), scopeRows("parts_range", map[string]string{"Lo": c.lo, "Hi": c.hi})
			} else if d["IDs"], err = r.idColumns(ctx, "memory", "out_"+t); err != nil {
				return nil, err
			}
			if err := r.do(ctx, "export/parts_rows.sql", d); err != nil {
				return nil, fmt.Errorf("match parts, chunk %d: %w", c.k, err)
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// partsScope is the set of matches whose parts are rendered again.
func (r *run) partsScope(ctx context.Context) (map[tables.ID]bool, error) {
	ids, err := query(ctx, r, "export/parts_ids.sql", nil, nil, func(s *string) []any { return []any{s} })
	if err != nil {
		return nil, err
	}
	out := make(map[tables.ID]bool, len(ids))
	for _, s := range ids {
		id, ok := tables.ParseID(s)
		if !ok {
			return nil, fmt.Errorf("match id %q is not an id", s)
		}
		out[id] = true
	}
	return out, nil
}

// save writes the registries back to the store, the quarantined lines
// (with their reasons) into the raw area and the run report, then commits
// the state.
func (r *run) save(ctx context.Context) (int64, error) {
	for key, table := range map[string]string{idsKey: "id_map", slugsKey: "slug_map"} {
		path := filepath.Join(r.o.WorkDir, "state-"+filepath.Base(key))
		if err := r.do(ctx, "save/registry.sql", map[string]string{"Table": table, "Path": path}); err != nil {
			return 0, err
		}
		if err := store.PutFile(ctx, r.o.Store, key, path); err != nil {
			return 0, fmt.Errorf("save %s: %w", key, err)
		}
	}
	if err := r.fillQuarantineBodies(ctx); err != nil {
		return 0, fmt.Errorf("read quarantined lines back: %w", err)
	}
	type reason struct {
		entity, reason string
		n              int
	}
	reasons, err := query(ctx, r, "save/quarantine_counts.sql", nil, nil, func(x *reason) []any {
		return []any{&x.entity, &x.reason, &x.n}
	})
	if err != nil {
		return 0, err
	}
	var total int64
	for _, x := range reasons {
		if r.rep.Quarantined[x.entity] == nil {
			r.rep.Quarantined[x.entity] = map[string]int{}
		}
		r.rep.Quarantined[x.entity][x.reason] = x.n
		total += int64(x.n)
	}
	if total > 0 {
		path := filepath.Join(r.o.WorkDir, "quarantine.ndjson")
		if err := r.do(ctx, "save/quarantine_file.sql", path); err != nil {
			return 0, err
		}
		if err := store.PutFile(ctx, r.o.Store, QuarantinePrefix+r.rep.RunID+".ndjson", path); err != nil {
			return 0, fmt.Errorf("save quarantine: %w", err)
		}
	}
	body, err := json.MarshalIndent(r.rep, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := store.PutBytes(ctx, r.o.Store, RunsPrefix+r.rep.RunID+".json", body); err != nil {
		return 0, fmt.Errorf("save run report: %w", err)
	}
	return total, r.commit(ctx)
}

// QuarantinePrefix holds one NDJSON file of quarantined lines per run. It is
// inside the raw area because a quarantined price capture names its book.
const QuarantinePrefix = "raw/quarantine/"

// RunsPrefix holds one JSON report per pipeline run.
const RunsPrefix = "state/runs/"

// fillQuarantineBodies reads the lines quarantined after staging back from
// their raw files (batches are immutable), so the quarantine keeps every
// rejected line verbatim without the pipeline holding all bodies in memory.
func (r *run) fillQuarantineBodies(ctx context.Context) error {
	type ref struct {
		seq    int
		entity string
		line   int32
	}
	refs, err := query(ctx, r, "save/quarantine_missing.sql", nil, nil, func(x *ref) []any {
		return []any{&x.seq, &x.entity, &x.line}
	})
	if err != nil || len(refs) == 0 {
		return err
	}
	type file struct {
		seq    int
		entity string
	}
	want := map[file]map[int32]bool{}
	for _, x := range refs {
		f := file{x.seq, x.entity}
		if want[f] == nil {
			want[f] = map[int32]bool{}
		}
		want[f][x.line] = true
	}
	var bodies [][]any
	for x, lines := range want {
		path := filepath.Join(r.dirs[r.batches[x.seq-r.seqBase].BatchID], x.entity+".ndjson")
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		// The same reader as staging, so that line numbers agree (an
		// over-long line was quarantined with its prefix at staging).
		lr := raw.NewLineReader(f, raw.MaxLineBytes)
		for len(lines) > 0 {
			line, no, long, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return err
			}
			if n := int32(no); lines[n] && !long {
				bodies = append(bodies, []any{int32(x.seq), x.entity, n, string(line)})
				delete(lines, n)
			}
		}
		f.Close()
	}
	if err := r.do(ctx, "save/quarantine_bodies_table.sql", nil); err != nil {
		return err
	}
	if err := appendRows(ctx, r.db, "q_bodies", len(bodies), func(i int) []any { return bodies[i] }); err != nil {
		return err
	}
	return r.do(ctx, "save/fill_quarantine_bodies.sql", nil)
}
