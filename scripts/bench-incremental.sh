#!/usr/bin/env bash
# Benchmark of incremental pipeline runs against full rebuilds, in motion:
# a world's history is built once (a full run, which keeps the state), then
# the live replay of `eo up` lands one batch at a time (its lander, every
# LAND_SECONDS) and `eo pipeline run` takes it: an incremental run. The last
# raw input is then rebuilt in full (`--full`) in the same work folder, for
# the side-by-side ratio.
#
#   scripts/bench-incremental.sh                          # a fresh 10,000-match world
#   MATCHES=100000 DUCKDB_MEMORY=3GB scripts/bench-incremental.sh
#   RAW=/tmp/w100k/store/raw scripts/bench-incremental.sh  # an existing world's raw area (hard-linked)
#   ROUNDS=3 LAND_SECONDS=20 FAST_SPEED=20 scripts/bench-incremental.sh
#
# Each round lands two batches, one after the other: a live tick (the replay
# at speed 1 for LAND_SECONDS: scores and prices of matches in play, the
# model does not run again) and a fast one (speed FAST_SPEED: matches
# complete, the model runs again). Last, the full rebuild and the bare
# DuckDB read-and-write of the same raw input (`eo bench-duckdb`), each
# twice and alternated, for the issue's "full rebuild ≤ 3x bare" ratio.
# Prints markdown rows: run, kind, wall s, peak RSS MiB, mode, scope
# matches, changed tables, and the statement that raised an incremental
# run's DuckDB budget (if one did). Needs GNU time.
set -euo pipefail

cd "$(dirname "$0")/.."

MATCHES=${MATCHES:-10000}
ROUNDS=${ROUNDS:-2}
LAND_SECONDS=${LAND_SECONDS:-20}
FAST_SPEED=${FAST_SPEED:-20}
DUCKDB_MEMORY=${DUCKDB_MEMORY:-}
TIME=/usr/bin/time

BENCH_NAME=bench-incremental
BENCH_TOOLS="jq curl"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

DIR=$TMPROOT/world
mkdir -p "$DIR/store"
if [[ -n "${RAW:-}" ]]; then
	log "hard-linking $RAW"
	cp -al "$RAW" "$DIR/store/raw"
else
	log "generating $MATCHES matches"
	"$EO" generate --store "$DIR/store" --work "$DIR/work" --matches "$MATCHES" --seed "$SEED" >"$LOGS/generate.log" 2>&1
fi
MEM=()
if [[ -n "$DUCKDB_MEMORY" ]]; then
	MEM=(--duckdb-memory "$DUCKDB_MEMORY")
fi

# run NAME KIND [FLAGS...]: one `eo pipeline run`, measured; prints its row.
run() {
	local name=$1 kind=$2 t=$LOGS/$1.time
	shift 2
	"$TIME" -v -o "$t" "$EO" pipeline run --store "$DIR/store" --work "$DIR/work" "${MEM[@]}" "$@" >"$LOGS/$name.log" 2>&1 || {
		log "$name failed: $(tail -n 3 "$LOGS/$name.log")"
		return 1
	}
	local report wall peak
	report=$(ls -t "$DIR/store/state/runs/" | head -n 1)
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0
		for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s }' "$t")
	peak=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$t")
	jq -r --arg n "$name" --arg k "$kind" --arg w "$wall" --arg p "$peak" \
		'"| \($n) | \($k) | \($w) | \($p) | \(.mode) | \(.scope_matches // 0) | \((.changed_tables // []) | join(", ")) | \(.budget_raised // "") |"' \
		"$DIR/store/state/runs/$report"
}

# land SPEED: the replay of `eo up` lands one batch of LAND_SECONDS of play.
land() {
	local port
	port=$(free_port)
	timeout -s INT "$LAND_SECONDS" "$EO" up --store "$DIR/store" --work "$DIR/up" --schedule off --live-matches 8 \
		--live-speed "$1" --land-every 1h --addr "127.0.0.1:$port" >>"$LOGS/up.log" 2>&1 || true
}

echo "| run | kind | wall s | peak RSS MiB | mode | scope matches | changed tables | budget raised by |"
echo "| --- | --- | ---: | ---: | --- | ---: | --- | --- |"
run first "history: the first run keeps the state"
for i in $(seq 1 "$ROUNDS"); do
	land 1
	run "tick-$i" "a live batch (speed 1, ${LAND_SECONDS} s)"
	land "$FAST_SPEED"
	run "fast-$i" "a live batch completing matches (speed $FAST_SPEED)"
done
run full "the same raw input rebuilt in full" --full

# bare: the yardstick of a full rebuild, beside it: DuckDB reads the same
# raw input (read_json, every batch) and writes each entity as Parquet
# (`eo bench-duckdb`), with the same DuckDB limits. Prints the same columns.
bare() {
	local name=$1 t=$LOGS/$1.time
	rm -rf "$TMPROOT/bare"
	"$TIME" -v -o "$t" "$EO" bench-duckdb --raw "$DIR/store/raw" --out "$TMPROOT/bare" "${MEM[@]}" >"$LOGS/$name.log" 2>&1 || {
		log "$name failed: $(tail -n 3 "$LOGS/$name.log")"
		return 1
	}
	awk -F': ' -v n="$name" '/Elapsed \(wall clock\)/ { k = split($2, p, ":"); s = 0
		for (i = 1; i <= k; i++) s = s * 60 + p[i]; w = s }
		/Maximum resident set size/ { m = $2 / 1024 }
		END { printf "| %s | bare DuckDB read_json → Parquet of the same raw input | %.1f | %.0f | | | | |\n", n, w, m }' "$t"
}
bare bare-1
run full-2 "the same raw input rebuilt in full, again" --full
bare bare-2
