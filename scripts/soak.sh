#!/usr/bin/env bash
# Soak of the edge in motion: `eo up` serving a world with the live replay
# playing, wrk sending mixed keyed traffic for MINUTES, a pipeline run (a
# separate `eo pipeline run` process) publishing a new snapshot every
# SWAP_EVERY seconds that the edge swaps in, and usage export every minute.
# Every minute it samples the edge process: RSS, Go heap, open file
# descriptors, disk of the work folder and of counters.db, snapshot swaps,
# live events, 5xx answered. At the end it compares the first sample after
# warm-up (WARM minutes) with the last and prints Markdown for BENCHMARKS.md.
#
# The edge keeps no replaced snapshot (a cursor continues on the new one by
# key), so after a short warm-up (WARM minutes: the first swaps and the
# heap settling) memory that still grows is a leak.
#
#   scripts/soak.sh                                # 9 minutes, compared from minute 3
#   MINUTES=20 CONNS=64 MATCHES=3000 scripts/soak.sh
#
# Needs wrk, curl and jq. Loopback only; every process is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=soak
MATCHES=${MATCHES:-3000}
# Set before bench-lib, whose defaults (CONNS "32 64", LIVE_SLOTS 8) would
# apply otherwise.
CONNS=${CONNS:-64}
SWAP_EVERY=${SWAP_EVERY:-60}
WARM=${WARM:-3}
MINUTES=${MINUTES:-$((WARM + 6))}
LIVE_SLOTS=${LIVE_SLOTS:-4}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
export EO_USAGE_EXPORT_INTERVAL=${SOAK_EXPORT_INTERVAL:-1m}
export EO_POLL_INTERVAL=${EO_POLL_INTERVAL:-5s}

dir=$TMPROOT/world
world "$dir" "$MATCHES"
KEY=$(mint_key "$dir")
up "$dir" "$LOGS/up.log" "$LIVE_SLOTS" 1
EDGE_PID=$SERVE_PID
URL=$SERVE_URL

match=$(first_id "/v1/cs2/matches?status=completed&limit=1")
team=$(first_id "/v1/cs2/teams?limit=1")
player=$(first_id "/v1/cs2/players?limit=1")
tour=$(first_id "/v1/cs2/tournaments?limit=1")
mixed_lua "$TMPROOT/mixed.lua" \
	"/v1/cs2/matches?limit=50" \
	"/v1/cs2/matches?status=live" \
	"/v1/cs2/matches?status=live,scheduled&limit=50" \
	"/v1/cs2/odds/closing?limit=200" \
	"/v1/cs2/matches?status=scheduled&limit=20" \
	"/v1/cs2/matches/$match?include=maps,odds" \
	"/v1/cs2/matches/$match/stats" \
	"/v1/cs2/matches/$match/rounds" \
	"/v1/cs2/odds?limit=200" \
	"/v1/cs2/teams?limit=50" \
	"/v1/cs2/teams/$team/profile" \
	"/v1/cs2/players/$player/stats" \
	"/v1/cs2/tournaments/$tour" \
	"/v1/cs2/rankings?limit=100" \
	"/v1/cs2/coverage"

# metric NAME [FILTER]: one value (summed over label sets) from /metrics.
metric() {
	get /metrics | awk -v n="$1" -v f="${2:-}" '$1 ~ "^"n"({|$)" && index($1, f) { s += $2 } END { printf "%.0f", s }'
}
sample() {
	local rss heap fds work ctr swaps ev e5
	rss=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$EDGE_PID/status")
	# The lowest of five readings a second apart: the heap swings with the
	# collector's cycles, and its low point is nearest the live heap.
	heap=$(for _ in 1 2 3 4 5; do metric go_memstats_heap_alloc_bytes; echo; sleep 1; done |
		sort -n | head -1 | awk '{printf "%.0f", $1 / 1048576}')
	fds=$(find "/proc/$EDGE_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	work=$(du -sm "$dir/work" | cut -f1)
	ctr=$(stat -c %s "$dir/work/counters.db" | awk '{printf "%.1f", $1 / 1048576}')
	swaps=$(grep -c 'msg="snapshot loaded"' "$LOGS/up.log" || true)
	ev=$(metric eo_live_events_total)
	e5=$(metric eo_http_requests_total 'code="5')
	echo "$rss|$heap|$fds|$work|$ctr|$swaps|$ev|$e5"
}

log "soak: $MINUTES min, wrk -c$CONNS mixed traffic, a swap every ${SWAP_EVERY}s, usage export every $EO_USAGE_EXPORT_INTERVAL"
# wrk runs past the last sample (each takes about 5 s), so every sample is
# taken under load.
wrk -t2 -c"$CONNS" -d"$((MINUTES * (SWAP_EVERY + 6) + 30))s" --latency -H "Authorization: Bearer $KEY" -s "$TMPROOT/mixed.lua" "$URL" \
	>"$LOGS/wrk.txt" 2>&1 &
WRK_PID=$!
PIDS+=("$WRK_PID")
rows=()
rows+=("0|$(sample)")
for ((m = 1; m <= MINUTES; m++)); do
	# A pipeline run with its own work folder publishes a new snapshot.
	"$EO" pipeline run --store "$dir/store" --work "$TMPROOT/pipeline-work" >>"$LOGS/pipeline-soak.log" 2>&1 &
	PIPE_PID=$!
	sleep "$SWAP_EVERY"
	wait "$PIPE_PID" || log "pipeline run $m failed (see $LOGS/pipeline-soak.log)"
	if ! kill -0 "$EDGE_PID" 2>/dev/null; then
		log "the edge exited"; tail -20 "$LOGS/up.log" >&2; exit 1
	fi
	rows+=("$m|$(sample)")
	log "minute $m: ${rows[-1]}"
done
wait "$WRK_PID" || true

echo
echo "| minute | RSS MiB | heap MiB | fds | work MiB | counters.db MiB | snapshots loaded | live events | 5xx |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
echo
awk '/Requests\/sec:|requests in|Non-2xx|Socket errors|    99%|    50%/' "$LOGS/wrk.txt" | sed 's/^/    /'
grep -q 'Non-2xx' "$LOGS/wrk.txt" || echo "    non-2xx responses: 0"
grep -q 'Socket errors' "$LOGS/wrk.txt" || echo "    socket errors: 0"
echo
IFS='|' read -r _ rss0 heap0 fds0 _ ctr0 _ _ _ <<<"${rows[$WARM]}"
IFS='|' read -r _ rss1 heap1 fds1 _ ctr1 _ _ e51 <<<"${rows[-1]}"
check() { # name start end: within 20 %?
	awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { d = (a > 0) ? 100 * (b - a) / a : 0;
		printf "%s after warm-up %s -> end %s (%+.0f %%): %s\n", n, a, b, d, (d <= 20) ? "flat (within 20 %)" : "GREW" }'
}
check "RSS MiB" "$rss0" "$rss1"
check "heap MiB" "$heap0" "$heap1"
check "fds" "$fds0" "$fds1"
check "counters.db MiB" "$ctr0" "$ctr1"
echo "5xx answered: $e51"
