#!/usr/bin/env bash
# Benchmark of the edge in motion: one world served by `eo up` without the
# live replay and with it, alternating rounds, on the list and the bulk odds
# snapshot (the two endpoints live changes touch most). The replay plays
# LIVE_SLOTS matches at LIVE_SPEED (default 8 at 10x: ~27 score events and a
# few hundred price events a second), every event applied to the served view
# while wrk runs. No in-process jobs (a pipeline run would take the CPU) and
# no landing (--land-every 0: a landed batch would make the next start run
# the pipeline). Loopback only; every process is stopped on exit.
#
#   scripts/bench-live.sh
#   MATCHES=5000 LIVE_SLOTS=8 LIVE_SPEED=10 ROUNDS=3 WRK_ARGS="-t2 -c64 -d10s" scripts/bench-live.sh
#
# Needs wrk, curl and jq. Prints a Markdown table for BENCHMARKS.md: per
# target, the best round of each side, the ratio, p99, and the live events
# the view applied during the replay's wrk runs (proof the replay ran).
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-live
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

better() { ((${1%%|*} > ${2%%|*})) && echo "$1" || echo "$2"; }

cpus=$(nproc)
log "logs in $LOGS; $cpus CPUs; wrk $WRK_ARGS (warm-up $WARMUP); replay $LIVE_SLOTS slots at ${LIVE_SPEED}x"
W=$TMPROOT/world
world "$W" "$MATCHES"
KEY=$(mint_key "$W")
LIST="/v1/cs2/matches?limit=50"
ODDS="/v1/cs2/odds"
q_list="0|0|0" q_odds="0|0|0" r_list="0|0|0" r_odds="0|0|0"
ev_total=0 ev_secs=0
for ((r = 1; r <= ROUNDS; r++)); do
	up "$W" "$LOGS/up-quiet-r$r.log" 0
	q_list=$(better "$(bench "quiet-list-r$r" "$SERVE_URL$LIST")" "$q_list")
	q_odds=$(better "$(bench "quiet-odds-r$r" "$SERVE_URL$ODDS")" "$q_odds")
	stop "$SERVE_PID"

	up "$W" "$LOGS/up-replay-r$r.log" "$LIVE_SLOTS"
	sleep 5 # the slots' first matches start after one to three rounds
	e0=$(events)
	t0=$SECONDS
	r_list=$(better "$(bench "replay-list-r$r" "$SERVE_URL$LIST")" "$r_list")
	r_odds=$(better "$(bench "replay-odds-r$r" "$SERVE_URL$ODDS")" "$r_odds")
	e1=$(events)
	ev_total=$((ev_total + ${e1%.*} - ${e0%.*}))
	ev_secs=$((ev_secs + SECONDS - t0))
	stop "$SERVE_PID"
	log "round $r: quiet list ${q_list%%|*} odds ${q_odds%%|*}; replay list ${r_list%%|*} odds ${r_odds%%|*} (best so far)"
done
evs=$(awk -v n="$ev_total" -v s="$ev_secs" 'BEGIN { printf "%.0f", n / s }')

row() {
	local t=$1 q=$2 rp=$3
	IFS='|' read -r q_rps q_p99 q_bad <<<"$q"
	IFS='|' read -r r_rps r_p99 r_bad <<<"$rp"
	echo "| \`GET $t\` | $q_rps | $r_rps | **$(ratio "$r_rps" "$q_rps")** | $q_p99 | $r_p99 | $((q_bad + r_bad)) |"
}
echo
echo "### The edge in motion ($MATCHES matches; wrk $WRK_ARGS; best of $ROUNDS alternating rounds; $cpus CPUs)"
echo
echo "Replay: $LIVE_SLOTS matches at ${LIVE_SPEED}x; the view applied $evs live events a second during the replay's wrk runs."
echo
echo "| target | no replay req/s | replay req/s | replay / no replay | no replay p99 ms | replay p99 ms | non-2xx |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
row "$LIST" "$q_list" "$r_list"
row "$ODDS" "$q_odds" "$r_odds"
exit 0
