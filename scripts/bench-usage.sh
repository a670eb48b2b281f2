#!/usr/bin/env bash
# Usage-event retention under sustained load: the edge (embedded bbolt
# counters, then Redis counters) takes wrk traffic for DURATION while the
# usage export runs every EO_USAGE_EXPORT_INTERVAL (1m here); counters.db's
# size and the Redis stream's length are sampled every SAMPLE seconds. With
# pruning after export they stay flat; without it they grow with every
# request. Loopback only; every process it starts is stopped on exit.
#
#   scripts/bench-usage.sh                          # 4 minutes per backend, 300-match world
#   DURATION=2m SAMPLE=20 scripts/bench-usage.sh
#   EO_BIN=/path/to/eo scripts/bench-usage.sh       # measure that binary (e.g. an older build)
#   ONLY=embedded|redis scripts/bench-usage.sh
#
# Needs wrk, curl, jq (and redis-server, redis-cli for the Redis half).
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-usage
export EO_USAGE_EXPORT_INTERVAL=${EO_USAGE_EXPORT_INTERVAL:-1m}
MATCHES=${MATCHES:-300}
DURATION=${DURATION:-4m}
SAMPLE=${SAMPLE:-30}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

W=$TMPROOT/world
world "$W" "$MATCHES"
KEY=$(mint_key "$W")
URL_PATH="/v1/cs2/coverage"

# exported: events in the export files (sum of the "usage exported events=N"
# log lines, and of "exported=N" of runs that failed part-way).
exported() {
	{
		grep -o 'usage exported.*events=[0-9]*' "$1" | sed 's/.*events=//'
		grep -o 'usage export failed.*exported=[0-9]*' "$1" | sed 's/.*exported=//'
	} | awk '{s += $1} END {print s + 0}'
}
files() { find "$W/store/usage" -name '*.parquet' 2>/dev/null | wc -l; }

# run NAME PROBE: wrk for DURATION against a started edge, sampling PROBE
# (a command printing one number) every SAMPLE seconds.
run() {
	local name=$1 probe=$2 out=$LOGS/wrk-$1.txt start t=0 secs
	secs=$(awk -v d="$DURATION" 'BEGIN { n = d + 0; if (d ~ /m$/) n *= 60; print n }')
	echo "| $name | t=0 s | $($probe) |"
	wrk -t2 -c32 -d"$DURATION" -H "Authorization: Bearer $KEY" "$SERVE_URL$URL_PATH" >"$out" &
	local wrk_pid=$!
	PIDS+=("$wrk_pid")
	start=$SECONDS
	while ((SECONDS - start < secs)); do
		sleep "$SAMPLE"
		t=$((SECONDS - start))
		echo "| $name | t=$t s | $($probe) |"
	done
	wait "$wrk_pid" || true
	# One more export interval so the last events are exported (and pruned).
	sleep 65
	echo "| $name | t=$((SECONDS - start)) s (idle, after one more export) | $($probe) |"
	local reqs
	reqs=$(awk '/requests in/ {print $1}' "$out")
	echo "| $name | requests | $reqs (wrk), exported $(exported "$SERVE_LOG") events in $(files) files |"
}

if [[ "${ONLY:-embedded}" == embedded ]]; then
	SERVE_LOG=$LOGS/serve-embedded.log
	serve "$W" "$SERVE_LOG"
	db_size() { du -k --apparent-size "$W/work/counters.db" | awk '{printf "counters.db %.1f MB", $1 / 1024}'; }
	echo "| backend | when | size |"
	echo "| --- | --- | --- |"
	run embedded db_size
	stop "$SERVE_PID"
fi

if [[ "${ONLY:-redis}" == redis ]]; then
	rport=$(free_port)
	mkdir -p "$TMPROOT/redis"
	redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$TMPROOT/redis" \
		>"$LOGS/redis.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 50); do
		redis-cli -p "$rport" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	SERVE_LOG=$LOGS/serve-redis.log
	# With EO_REDIS_URL the keys live in Redis: copy the work folder's key in.
	EO_REDIS_URL="redis://127.0.0.1:$rport/0" "$EO" keys import --from "$W/work/access.db" --store "$W/store" \
		--work "$W/work" >/dev/null
	serve "$W" "$SERVE_LOG" EO_REDIS_URL="redis://127.0.0.1:$rport/0"
	stream() {
		echo "stream $(redis-cli -p "$rport" xlen eo:usage) entries, used_memory $(redis-cli -p "$rport" info memory |
			awk -F: '/^used_memory:/ {printf "%.1f MB", $2 / 1048576}')"
	}
	echo "| backend | when | size |"
	echo "| --- | --- | --- |"
	run redis stream
	stop "$SERVE_PID"
fi
