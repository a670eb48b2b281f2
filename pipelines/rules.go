package pipelines

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/marcboeker/go-duckdb/v2"

	"github.com/eodata/eo/raw"
)

// The plausibility checks of the check step are package raw's (the live
// path runs the same functions): sql/check/01_check.sql calls them as
// DuckDB scalar functions, registered on the run's connection.
//
//	eo_update_problem(status, result_type, score_a, score_b, kills_a, kills_b, format)
//	eo_map_problem(map_number, map_name, score_a, score_b, first_half_a, first_half_b,
//	               second_half_a, second_half_b, overtime_a, overtime_b, format)
//	eo_price_problem(market, outcome, price)
//
// each returns the quarantine reason, or ” when the record is plausible.
var rules = []rule{
	{"eo_update_problem", []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER,
		duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER, duckdb.TYPE_VARCHAR}, func(v []driver.Value) string {
		return raw.UpdateProblem(raw.MatchUpdate{Status: str(v[0]), ResultType: strPtr(v[1]), ScoreA: intPtr(v[2]),
			ScoreB: intPtr(v[3]), KillsA: intPtr(v[4]), KillsB: intPtr(v[5])}, str(v[6]))
	}},
	{"eo_map_problem", []duckdb.Type{duckdb.TYPE_INTEGER, duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER,
		duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER, duckdb.TYPE_INTEGER,
		duckdb.TYPE_INTEGER, duckdb.TYPE_VARCHAR}, func(v []driver.Value) string {
		return raw.MapProblem(raw.MapResult{MapNumber: num(v[0]), MapName: str(v[1]), ScoreA: num(v[2]), ScoreB: num(v[3]),
			FirstHalfA: intPtr(v[4]), FirstHalfB: intPtr(v[5]), SecondHalfA: intPtr(v[6]), SecondHalfB: intPtr(v[7]),
			OvertimeA: intPtr(v[8]), OvertimeB: intPtr(v[9])}, str(v[10]))
	}},
	{"eo_price_problem", []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR, duckdb.TYPE_DOUBLE},
		func(v []driver.Value) string {
			p, _ := v[2].(float64)
			return raw.PriceProblem(str(v[0]), str(v[1]), p)
		}},
}

// rule is one check as a DuckDB scalar function of its record's columns.
type rule struct {
	name  string
	args  []duckdb.Type
	check func([]driver.Value) string
}

func (r rule) Config() duckdb.ScalarFuncConfig {
	in := make([]duckdb.TypeInfo, len(r.args))
	for i, t := range r.args {
		in[i], _ = duckdb.NewTypeInfo(t)
	}
	out, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	// NULLs are values of the checks (an absent score), not a NULL result.
	return duckdb.ScalarFuncConfig{InputTypeInfos: in, ResultTypeInfo: out, SpecialNullHandling: true}
}

func (r rule) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(v []driver.Value) (any, error) { return r.check(v), nil }}
}

// registerRules registers the checks on db's connection.
func registerRules(db *sql.DB) error {
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, r := range rules {
		if err := duckdb.RegisterScalarUDF(conn, r.name, r); err != nil {
			return fmt.Errorf("register %s: %w", r.name, err)
		}
	}
	return nil
}

func str(v driver.Value) string {
	s, _ := v.(string)
	return s
}

func strPtr(v driver.Value) *string {
	if s, ok := v.(string); ok {
		return &s
	}
	return nil
}

func intPtr(v driver.Value) *int {
	if n, ok := v.(int32); ok {
		i := int(n)
		return &i
	}
	return nil
}

func num(v driver.Value) int {
	n, _ := v.(int32)
	return int(n)
}
