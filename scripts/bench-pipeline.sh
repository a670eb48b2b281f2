#!/usr/bin/env bash
# Benchmark of the batch path: `eo generate` + `eo pipeline run` (which also
# publishes the snapshot) on fresh temporary stores, one per size.
#
#   scripts/bench-pipeline.sh                 # sizes 10000 and 100000
#   SIZES="1000 10000" scripts/bench-pipeline.sh
#   LOG_DIR=/tmp/bench-logs scripts/bench-pipeline.sh   # keep the raw logs
#   EO_BIN=/path/to/eo scripts/bench-pipeline.sh         # measure that binary, skip the build
#
# Needs GNU time at /usr/bin/time (package "time"). Prints markdown: one
# summary row per size, then the per-step breakdown of each pipeline run.
# Every temporary folder is removed on exit, also on failure or Ctrl-C.
# A failing command does not stop the other sizes: its row says FAILED and
# the tail of its log is printed after the tables.
set -euo pipefail

cd "$(dirname "$0")/.."

SIZES=${SIZES:-10000 100000}
SEED=${SEED:-42}
NOW=${NOW:-2026-11-01T00:00:00Z}
TIME=/usr/bin/time

if ! "$TIME" -v true >/dev/null 2>&1; then
	echo "bench-pipeline: GNU time with -v is needed at $TIME" >&2
	exit 1
fi

BENCH_NAME=bench-pipeline
BENCH_TOOLS=""
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

if [[ -n "${LOG_DIR:-}" ]]; then
	mkdir -p "$LOG_DIR"
fi

# wall_seconds FILE: "Elapsed (wall clock)" of a `time -v` report, in seconds.
wall_seconds() {
	awk -F': ' '/Elapsed \(wall clock\)/ {
		n = split($2, p, ":"); s = 0
		for (i = 1; i <= n; i++) s = s * 60 + p[i]
		printf "%.1f", s }' "$1"
}

# peak_mib FILE: "Maximum resident set size" of a `time -v` report, in MiB.
peak_mib() {
	awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$1"
}

# exit_status FILE: the exit status recorded by `time -v`.
exit_status() {
	awk -F': ' '/Exit status/ { print $2 }' "$1"
}

# du_mib DIR: disk usage of DIR in MiB (0 when absent).
du_mib() {
	if [[ -d "$1" ]]; then
		du -sk "$1" | awk '{ printf "%.1f", $1 / 1024 }'
	else
		echo 0
	fi
}

# top_tables MANIFEST K: the K biggest tables by rows, "name rows" per line.
top_tables() {
	awk -F'"' '/"name":/ { name = $4 } /"rows":/ { gsub(/[^0-9]/, "", $3); print name, $3 }' "$1" |
		sort -k2,2nr | head -n "$2"
}

# fmt_int N: thousands separators.
fmt_int() { printf "%'d" "$1" 2>/dev/null || printf "%d" "$1"; }

summary=()
steps=()
failures=()

for n in $SIZES; do
	dir="$TMPROOT/$n"
	store="$dir/store"
	work="$dir/work"
	mkdir -p "$store" "$work"
	echo "bench-pipeline: $n matches ..." >&2

	gen_rc=0
	"$TIME" -v -o "$dir/gen.time" "$EO" generate --store "$store" --work "$work" \
		--matches "$n" --seed "$SEED" --now "$NOW" >"$dir/gen.out" 2>"$dir/gen.log" || gen_rc=$?
	if [[ -n "${LOG_DIR:-}" ]]; then cp "$dir/gen.log" "$LOG_DIR/generate-$n.log"; cp "$dir/gen.time" "$LOG_DIR/generate-$n.time"; fi
	gen_wall=$(wall_seconds "$dir/gen.time")
	gen_rss=$(peak_mib "$dir/gen.time")
	raw_mib=$(du_mib "$store/raw")
	if [[ $gen_rc -ne 0 ]]; then
		failures+=("generate $n: exit $gen_rc (time -v: $(exit_status "$dir/gen.time"))"$'\n'"$(tail -n 20 "$dir/gen.log")")
		summary+=("| $(fmt_int "$n") | FAILED (exit $gen_rc) ${gen_wall} s | ${gen_rss} MiB | – | – | ${raw_mib} | – | – |")
		rm -rf "$dir"
		continue
	fi

	pipe_rc=0
	"$TIME" -v -o "$dir/pipe.time" "$EO" pipeline run --store "$store" --work "$work" \
		>"$dir/pipe.out" 2>"$dir/pipe.log" || pipe_rc=$?
	if [[ -n "${LOG_DIR:-}" ]]; then
		cp "$dir/pipe.log" "$LOG_DIR/pipeline-$n.log"; cp "$dir/pipe.out" "$LOG_DIR/pipeline-$n.out"; cp "$dir/pipe.time" "$LOG_DIR/pipeline-$n.time"
	fi
	pipe_wall=$(wall_seconds "$dir/pipe.time")
	pipe_rss=$(peak_mib "$dir/pipe.time")
	snap_mib=$(du_mib "$store/snapshots")

	# Per-step lines: step="stage raw lines" rows=56063 step_elapsed=219ms
	while IFS= read -r line; do
		step=$(sed -E 's/.* step=("([^"]*)"|([^ ]*)) .*/\2\3/' <<<"$line")
		rows=$(sed -E 's/.* rows=([0-9]+).*/\1/' <<<"$line")
		el=$(sed -E 's/.* step_elapsed=([^ ]+).*/\1/' <<<"$line")
		steps+=("| $(fmt_int "$n") | $step | $(fmt_int "$rows") | $el |")
	done < <(grep 'msg="pipeline step"' "$dir/pipe.log" || true)

	staged=$(grep 'step="stage raw lines"' "$dir/pipe.log" | sed -E 's/.* rows=([0-9]+).*/\1/' || true)
	if [[ $pipe_rc -ne 0 ]]; then
		failures+=("pipeline run $n: exit $pipe_rc (time -v: $(exit_status "$dir/pipe.time"); peak RSS ${pipe_rss} MiB after ${pipe_wall} s)"$'\n'"$(tail -n 20 "$dir/pipe.log")")
		summary+=("| $(fmt_int "$n") | ${gen_wall} s | ${gen_rss} MiB | FAILED (exit $pipe_rc) ${pipe_wall} s | ${pipe_rss} MiB | ${raw_mib} | ${snap_mib} | staged ${staged:-?} lines |")
		rm -rf "$dir"
		continue
	fi

	manifest=$(ls "$store"/snapshots/*/manifest.json | head -n 1)
	big=""
	while read -r name rows; do
		big+="${big:+, }$name $(fmt_int "$rows")"
	done < <(top_tables "$manifest" 4)
	quar=$(sed -nE 's/.*, ([0-9]+) quarantined lines.*/\1/p' "$dir/pipe.out")
	summary+=("| $(fmt_int "$n") | ${gen_wall} s | ${gen_rss} MiB | ${pipe_wall} s | ${pipe_rss} MiB | ${raw_mib} | ${snap_mib} | $(fmt_int "${staged:-0}") staged, ${quar:-?} quarantined; $big |")
	rm -rf "$dir"
done

echo
echo "| matches | generate wall | generate peak RSS | pipeline+publish wall | pipeline peak RSS | raw MiB | snapshot MiB | rows |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
printf '%s\n' "${summary[@]}"
echo
echo "| matches | step | rows | step time |"
echo "| ---: | --- | ---: | ---: |"
if [[ ${#steps[@]} -gt 0 ]]; then printf '%s\n' "${steps[@]}"; fi

if [[ ${#failures[@]} -gt 0 ]]; then
	echo
	echo "FAILURES:"
	for f in "${failures[@]}"; do
		echo "--- $f"
	done
	exit 1
fi
