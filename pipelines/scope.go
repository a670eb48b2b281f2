package pipelines

import (
	"context"
	"fmt"
	"text/template"

	"github.com/eodata/eo/raw"
	eosql "github.com/eodata/eo/sql"
)

// scopeData is what the scope's SQL files are rendered with: the child
// entities, each with the predicate on its raw rows (upstream keys) that
// selects the scope's, and the parents.
func scopeData(all bool) map[string]any {
	type child struct{ E, Pred string }
	var children []child
	for _, e := range childEntities() {
		children = append(children, child{string(e), upstreamScope(e)})
	}
	var parents []string
	for _, e := range parentEntities {
		if e != raw.Matches {
			parents = append(parents, string(e))
		}
	}
	return map[string]any{"Children": children, "Parents": parents, "Entities": raw.Entities, "All": all}
}

// upstreamScope is the predicate on a raw entity's rows (upstream keys)
// that selects the scope's.
func upstreamScope(e raw.Entity) string {
	switch e {
	case raw.Matches:
		return scopeRows("upstream_id")
	case raw.PriceCaptures:
		return scopeRows("upstream_odds")
	}
	return scopeRows("upstream_match")
}

// scopeRows is the predicate of sql/scope/predicates.sql named kind.
func scopeRows(kind string, data ...any) string {
	var d any
	if len(data) > 0 {
		d = data[0]
	}
	q, err := eosql.Fragment("scope/predicates.sql", kind, d)
	if err != nil {
		panic(err) // a name this package passes that the file lacks: TestScopePredicates
	}
	return q
}

// Predicates on published tables (service ids) selecting the scope's rows.
var (
	byScopeMatch = scopeRows("match")
	byScopeID    = scopeRows("id")
	byScopeOdds  = scopeRows("odds")
)

// scope finds the matches the new lines touch (and every match of their
// tournaments) and adds the state's records of the scope to the candidate
// tables, next to the new lines: the checks and last-write-wins then see
// every record of those matches. Parents (tournaments, teams, players,
// books) are taken whole: a run that continues the state has none new. On
// a new state there is nothing to add and the scope is every match.
func (r *run) scope(ctx context.Context) (int64, error) {
	if err := r.do(ctx, "scope/scope.sql", scopeData(r.all)); err != nil {
		return 0, err
	}
	n, err := r.count(ctx, "scope_u")
	r.rep.Scope = n
	return n, err
}

// check runs the reference and plausibility checks (check/01_check.sql)
// on the candidates, parents first; the file calls {{winners "<entity>"}}
// after checking an entity, which picks its last-write-wins winners among
// the survivors into v_<entity>. Every entity must get its winners exactly
// once.
func (r *run) check(ctx context.Context) (int64, error) {
	const name = "check/01_check.sql"
	done := map[raw.Entity]bool{}
	q, err := eosql.Render(name, nil, template.FuncMap{"spec": func(e string) (raw.Spec, error) {
		spec, ok := raw.SpecOf(raw.Entity(e))
		if !ok || done[spec.Entity] {
			return spec, fmt.Errorf("winners %q: not an entity, or twice", e)
		}
		done[spec.Entity] = true
		return spec, nil
	}})
	if err != nil {
		return 0, err
	}
	for _, e := range raw.Entities {
		if !done[e] {
			return 0, fmt.Errorf("%s: no winners for %s", name, e)
		}
	}
	if err := r.execStatements(ctx, name, q); err != nil {
		return 0, err
	}
	return r.count(ctx, "bad")
}

// registries loads the id and slug registries, mints the ids of keys seen
// for the first time, assigns slugs and lists the scope's service ids.
func (r *run) registries(ctx context.Context) (int64, error) {
	if err := r.loadRegistries(ctx); err != nil {
		return 0, err
	}
	n, err := r.mintIDs(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := r.assignSlugs(ctx); err != nil {
		return 0, err
	}
	return n, r.do(ctx, "scope/ids.sql", nil)
}

// normalise builds the normalised out_ tables (service ids and slugs).
func (r *run) normalise(ctx context.Context) (int64, error) {
	return 0, r.execFolder(ctx, "normalise", nil)
}

// derive runs the derive steps in order: match state, player ratings and
// the eo_market lines (the Go walk of pipelines/odds.go after the file that
// keys the captures).
func (r *run) derive(ctx context.Context) (int64, error) {
	if err := r.execFolder(ctx, "derive", map[string]func(context.Context) (int64, error){
		"derive/00_odds.sql": r.oddsSeries,
	}); err != nil {
		return 0, err
	}
	return r.count(ctx, "out_matches")
}

// modelInputs are the queries, on catalog {{.DB}}, whose scope rows the
// ratings and model step reads (sql/scope/model_inputs_*.sql): a difference
// between the state's and the scope's means it runs again. Each is compared
// only when the new batches hold records of its entity (the matches'
// results always: a match update can change them).
var modelInputs = map[raw.Entity]string{
	"":               "scope/model_inputs_matches.sql",
	raw.MapResults:   "scope/model_inputs_maps.sql",
	raw.PlayerStats:  "scope/model_inputs_stats.sql",
	raw.MatchUpdates: "scope/model_inputs_updates.sql",
}

// differ says whether the query of the SQL file name, rendered with data
// ({{.DB}} standing for the catalog), gives other rows on the state (st)
// than on src.
func (r *run) differ(ctx context.Context, name string, data map[string]any, src string) (bool, error) {
	with := func(db string) (string, error) {
		d := map[string]any{"DB": db}
		for k, v := range data {
			if k != "DB" {
				d[k] = v
			}
		}
		return eosql.Render(name, d, nil)
	}
	old, err := with("st")
	if err != nil {
		return false, err
	}
	neu, err := with(src)
	if err != nil {
		return false, err
	}
	var n int64
	if err := r.value(ctx, "scope/differ.sql", map[string]string{"Old": trimSemicolon(old), "New": trimSemicolon(neu)}, &n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// assemble decides whether the ratings and model step runs and, when it
// does not, assembles the scope's odds lines with the state's eo_model
// lines (when it does, the assemble runs on everything after it). The
// model runs when what it reads of the scope changed, or the scope's
// closing lines did (the model review reads them); on a new state, always.
func (r *run) assemble(ctx context.Context) (int64, error) {
	if r.all {
		r.model, r.results = true, true
		return 0, nil
	}
	if err := r.do(ctx, "scope/completed.sql", nil); err != nil {
		return 0, err
	}
	for e, q := range modelInputs {
		if e != "" && !r.entities[e] {
			continue
		}
		d, err := r.differ(ctx, q, nil, "memory")
		if err != nil {
			return 0, err
		}
		r.model = r.model || d
	}
	var err error
	if r.results, err = r.differ(ctx, "scope/match_results.sql", nil, "memory"); err != nil || r.model {
		return 0, err
	}
	if err := r.do(ctx, "scope/model_lines.sql", nil); err != nil {
		return 0, err
	}
	if err := r.execFolder(ctx, "assemble", nil); err != nil {
		return 0, err
	}
	if r.model, err = r.differ(ctx, "scope/closing_lines.sql", nil, "memory"); err != nil {
		return 0, err
	}
	return r.count(ctx, "out_odds_lines")
}
