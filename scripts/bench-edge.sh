#!/usr/bin/env bash
# Benchmark of the REST edge (`eo serve`) against a bare Fiber handler that
# returns the same bytes (`eo bench-bare`), and of the metering backends.
# Loopback only; every process it starts is stopped on exit (also on failure
# or Ctrl-C) and every temporary folder removed.
#
#   scripts/bench-edge.sh                       # 5,000-match world, then the 100k-match world
#   SKIP_100K=1 scripts/bench-edge.sh           # skip the 100k world (its pipeline takes about 5 min and 3 GiB)
#   MATCHES=10000 scripts/bench-edge.sh         # another size for the main world
#   WORLD_100K=/path scripts/bench-edge.sh      # reuse a 100k world: /path/store and /path/work from
#                                               # `eo generate --matches 100000` + `eo pipeline run`
#   ONLY_100K=1 WORLD_100K=/path scripts/bench-edge.sh   # phase 5 only
#   EO_BIN=/path/to/eo scripts/bench-edge.sh    # measure that binary, skip the build
#   CONNS="32 64" DURATION=10s WARMUP=2s ROUNDS=3 LOG_DIR=/tmp/edge-logs scripts/bench-edge.sh
#   LIVE_SLOTS=8 LIVE_SPEED=10 scripts/bench-edge.sh   # the replay of the "replay" rows
#   (each edge/bare pair is measured ROUNDS times, alternating; the best round of each side is reported)
#
# Needs wrk (apt-get install -y wrk), curl, jq, and redis-server for the Redis
# row (apt-get install -y redis-server; without it the row says SKIPPED).
#
# Phases, all in one run so the figures share the machine's state:
#   1. generate + pipeline a world of MATCHES matches in a temporary store;
#      create an account and an internal-plan key.
#   2. start `eo up` without the live replay (embedded bbolt counters);
#      record the snapshot load time it logs and VmRSS once it answers /ready.
#   3. per target (list, detail, odds bulk and per match, rankings, teams,
#      players) and per wrk connection count (CONNS, default "32 64"): fetch
#      the body, start `eo bench-bare` with it, then wrk the edge and the bare
#      handler back to back, ROUNDS alternating rounds; then the list with a
#      distinct URI every request (scripts/wrk-unique.lua), which the page
#      cache cannot answer. Then the same with `eo up` playing the live
#      replay (LIVE_SLOTS matches at LIVE_SPEED x).
#   4. metering on /v1/cs2/matches?limit=50: edge with embedded counters, edge
#      with Redis counters (EO_REDIS_URL, a redis-server started here), edge
#      with --no-metering, bare.
#   5. unless SKIP_100K=1: the same load time + VmRSS (and one wrk row) for a
#      100,000-match world, generated after phases 2-4 so it does not compete
#      with wrk for the CPU.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-edge
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

# paired N EDGE_URL BARE_URL: ROUNDS alternating wrk runs of the edge and the
# bare handler; prints the best round of each ("edge rps|p99|non-2xx|bare
# rps|p99|non-2xx"). Alternating and keeping the best of each side filters
# out a burst of load from other processes on a shared machine.
paired() {
	local r best_e="0|0|0" best_b="0|0|0" e b
	for ((r = 1; r <= ROUNDS; r++)); do
		e=$(bench "edge-$1-r$r" "$2")
		settle
		b=$(bench "bare-$1-r$r" "$3")
		((${e%%|*} > ${best_e%%|*})) && best_e=$e
		((${b%%|*} > ${best_b%%|*})) && best_b=$b
	done
	echo "$best_e|$best_b"
}

cpus=$(nproc)
log "logs in $LOGS; $cpus CPUs; wrk $WRK_ARGS (warm-up $WARMUP)"

ROWS=()
MROWS=()
LROWS=()
if [[ "${ONLY_100K:-}" != 1 ]]; then
# 1. the world
W=$TMPROOT/world
world "$W" "$MATCHES"
KEY=$(mint_key "$W")

# 2-3. per mode (no replay, then the live replay playing LIVE_SLOTS matches
# at LIVE_SPEED x): start `eo up` on the world (embedded counters), record
# the load of the quiet one, then per target and per connection count fetch
# the body, start `eo bench-bare` with it and wrk both sides.
LIST="/v1/cs2/matches?limit=50"
for mode in quiet replay; do
	slots=0
	[[ $mode == replay ]] && slots=$LIVE_SLOTS
	up "$W" "$LOGS/up-$mode.log" "$slots"
	if [[ $mode == quiet ]]; then
		IFS='|' read -r LOAD_MAIN RSS_MAIN HEAP_MAIN <<<"$(load_stats "$LOGS/up-$mode.log" "$SERVE_PID")"
		log "snapshot of $MATCHES matches loaded in $LOAD_MAIN, VmRSS $RSS_MAIN MiB"
		fetch "$SERVE_URL/v1/cs2/matches?status=completed&limit=1" "$TMPROOT/completed.json"
		MATCH_ID=$(jq -r '.data[0].id' "$TMPROOT/completed.json")
		TARGETS=("$LIST" "/v1/cs2/matches/$MATCH_ID?include=teams,maps,stats,odds"
			"/v1/cs2/matches/$MATCH_ID?include=teams,tournament,maps,stats,odds"
			"/v1/cs2/odds" "/v1/cs2/odds?match=$MATCH_ID" "/v1/cs2/rankings?limit=50"
			"/v1/cs2/teams?limit=50" "/v1/cs2/players?limit=50" "/v1/cs2/tournaments?limit=50")
	else
		sleep 5 # the slots' first matches start after one to three rounds
		e0=$(events)
		t0=$SECONDS
	fi
	i=0
	for t in "${TARGETS[@]}"; do
		i=$((i + 1))
		body=$TMPROOT/body-$mode-$i.json
		fetch "$SERVE_URL$t" "$body"
		bare "$body"
		for conns in $CONNS; do
			WRK_ARGS="-t2 -c$conns -d$DURATION"
			log "$mode: target $t ($(wc -c <"$body") bytes), -c$conns"
			IFS='|' read -r e_rps e_p99 e_bad b_rps b_p99 b_bad <<<"$(paired "$mode-$i-c$conns" "$SERVE_URL$t" "$BARE_URL$t")"
			ROWS+=("| \`GET $t\` | $mode | $conns | $(wc -c <"$body") | $e_rps | $b_rps | **$(ratio "$e_rps" "$b_rps")** | $e_p99 | $b_p99 | $(ratio2 "$e_p99" "$b_p99") | $e_bad |")
		done
		stop "$BARE_PID"
	done
	# The list with every request a page-cache miss (a distinct URI each).
	body=$TMPROOT/body-$mode-1.json
	bare "$body"
	for conns in $CONNS; do
		WRK_ARGS="-t2 -c$conns -d$DURATION"
		log "$mode: $LIST, every request a page-cache miss, -c$conns"
		IFS='|' read -r e_rps e_p99 e_bad b_rps b_p99 b_bad <<<"$(WRK_SCRIPT=scripts/wrk-unique.lua paired "$mode-miss-c$conns" "$SERVE_URL$LIST" "$BARE_URL$LIST")"
		ROWS+=("| \`GET $LIST\`, each request a cache miss | $mode | $conns | $(wc -c <"$body") | $e_rps | $b_rps | **$(ratio "$e_rps" "$b_rps")** | $e_p99 | $b_p99 | $(ratio2 "$e_p99" "$b_p99") | $e_bad |")
	done
	stop "$BARE_PID"
	if [[ $mode == replay ]]; then
		e1=$(events)
		EVS=$(awk -v n="$(( ${e1%.*} - ${e0%.*} ))" -v s="$((SECONDS - t0))" 'BEGIN { printf "%.0f", n / s }')
	fi
	stop "$SERVE_PID"
done
WRK_ARGS="-t2 -c32 -d$DURATION"
serve "$W" "$LOGS/serve-embedded.log"

# 4. metering: embedded vs Redis vs bare, on the list
IFS='|' read -r m_rps m_p99 m_bad <<<"$(bench meter-embedded "$SERVE_URL$LIST")"
MROWS+=("| edge, embedded bbolt counters (internal plan) | $m_rps | $m_p99 | $m_bad |")
stop "$SERVE_PID"
if command -v redis-server >/dev/null; then
	rport=$(free_port)
	mkdir -p "$TMPROOT/redis"
	redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$TMPROOT/redis" \
		>"$LOGS/redis.log" 2>&1 &
	REDIS_PID=$!
	PIDS+=("$REDIS_PID")
	for _ in $(seq 50); do
		redis-cli -p "$rport" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	# With EO_REDIS_URL the keys live in Redis: copy the work folder's key in.
	EO_REDIS_URL="redis://127.0.0.1:$rport/0" "$EO" keys import --from "$W/work/access.db" --store "$W/store" \
		--work "$W/work" >/dev/null
	serve "$W" "$LOGS/serve-redis.log" EO_REDIS_URL="redis://127.0.0.1:$rport/0"
	IFS='|' read -r m_rps m_p99 m_bad <<<"$(bench meter-redis "$SERVE_URL$LIST")"
	MROWS+=("| edge, Redis counters (EO_REDIS_URL, local redis-server) | $m_rps | $m_p99 | $m_bad |")
	stop "$SERVE_PID"
	stop "$REDIS_PID"
else
	MROWS+=("| edge, Redis counters | SKIPPED (no redis-server) | | |")
fi
SERVE_FLAGS=--no-metering serve "$W" "$LOGS/serve-unmetered.log"
IFS='|' read -r m_rps m_p99 m_bad <<<"$(bench meter-off "$SERVE_URL$LIST")"
MROWS+=("| edge, no metering (\`eo serve --no-metering\`: keys checked, no limits or usage records) | $m_rps | $m_p99 | $m_bad |")
stop "$SERVE_PID"
bare "$TMPROOT/body-quiet-1.json"
IFS='|' read -r m_rps m_p99 m_bad <<<"$(bench meter-bare "$BARE_URL$LIST")"
MROWS+=("| no metering: bare Fiber handler, same bytes | $m_rps | $m_p99 | $m_bad |")
stop "$BARE_PID"
LROWS+=("| $MATCHES | $LOAD_MAIN | $RSS_MAIN | $HEAP_MAIN |")
fi

# 5. the 100k world
LIST="/v1/cs2/matches?limit=50"
if [[ "${SKIP_100K:-}" != 1 ]]; then
	if [[ -n "${WORLD_100K:-}" ]]; then
		W100=$WORLD_100K
	else
		W100=$TMPROOT/world-100k
		world "$W100" 100000
	fi
	KEY=$(mint_key "$W100")
	serve "$W100" "$LOGS/serve-100k.log"
	IFS='|' read -r l100 r100 h100 <<<"$(load_stats "$LOGS/serve-100k.log" "$SERVE_PID")"
	log "snapshot of 100000 matches loaded in $l100, VmRSS $r100 MiB"
	IFS='|' read -r h_rps h_p99 h_bad <<<"$(bench edge-100k "$SERVE_URL$LIST")"
	stop "$SERVE_PID"
	LROWS+=("| 100000 | $l100 | $r100 | $h100 |")
	LIST100="| edge at 100,000 matches, \`GET $LIST\` | $h_rps | $h_p99 | $h_bad |"
fi

echo
echo "### Edge vs bare Fiber ($MATCHES matches; wrk -t2 -d$DURATION; best of $ROUNDS alternating rounds; $cpus CPUs)"
echo
echo "Edge: \`eo up\` with embedded metering (internal-plan key). replay: $LIVE_SLOTS matches at ${LIVE_SPEED}x, the view applying ${EVS:-?} live events a second during those runs."
echo
echo "| target | mode | conns | body bytes | edge req/s | bare req/s | edge / bare | edge p99 ms | bare p99 ms | p99 edge / bare | edge non-2xx |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
((${#ROWS[@]})) && printf '%s\n' "${ROWS[@]}"
echo
echo "### Metering on \`GET $LIST\` (one run)"
echo
echo "| setup | req/s | p99 ms | non-2xx |"
echo "| --- | ---: | ---: | ---: |"
((${#MROWS[@]})) && printf '%s\n' "${MROWS[@]}"
[[ -n "${LIST100:-}" ]] && echo "$LIST100"
echo
echo "### Snapshot load (eo serve's \"snapshot loaded ... elapsed= heap_alloc_bytes=\" line; VmRSS once /ready answers)"
echo
echo "| matches | load time | VmRSS MiB | live heap MiB |"
echo "| ---: | ---: | ---: | ---: |"
((${#LROWS[@]})) && printf '%s\n' "${LROWS[@]}"
exit 0
