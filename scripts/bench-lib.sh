# Helpers shared by the benchmark scripts (sourced, not run): settings,
# the eo binary, a temporary root whose processes and folders are removed on
# exit, and functions to build a world, start processes and run wrk.
# BENCH_NAME names the script in log lines and the temporary folder;
# BENCH_TOOLS the commands it needs (default: wrk curl jq).
MATCHES=${MATCHES:-5000}
SEED=${SEED:-42}
WRK_ARGS=${WRK_ARGS:--t2 -c32 -d10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-3}
# The live replay (bench-live.sh, bench-edge.sh): matches played at once, speed.
LIVE_SLOTS=${LIVE_SLOTS:-8}
LIVE_SPEED=${LIVE_SPEED:-10}
# bench-edge.sh: wrk connection counts and the length of each run.
CONNS=${CONNS:-32 64}
DURATION=${DURATION:-10s}
# Usage export (every 5 min by default) would land inside a measurement.
export EO_USAGE_EXPORT_INTERVAL=${EO_USAGE_EXPORT_INTERVAL:-24h}
unset EO_REDIS_URL EO_PLANS EO_STORE EO_WORK

for tool in ${BENCH_TOOLS-wrk curl jq}; do
	if ! command -v "$tool" >/dev/null; then
		echo "${BENCH_NAME:-bench}: $tool is needed (apt-get install -y $tool)" >&2
		exit 1
	fi
done

if [[ -n "${EO_BIN:-}" ]]; then
	EO=$EO_BIN
else
	go build -o bin/eo ./cmd/eo
	EO=bin/eo
fi

TMPROOT=$(mktemp -d "${TMPDIR:-/tmp}/eo-${BENCH_NAME:-bench}.XXXXXX")
LOGS=${LOG_DIR:-$TMPROOT/logs}
mkdir -p "$LOGS"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMPROOT"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "${BENCH_NAME:-bench}: $*" >&2; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# stop PID: stop one process this script started.
stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	local keep=() p
	for p in "${PIDS[@]}"; do
		[[ $p == "$1" ]] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# wait_http URL PID SECONDS: until URL answers 200, the process dies, or the time is up.
wait_http() {
	local deadline=$((SECONDS + $3))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$2" 2>/dev/null; then
			log "process $2 exited before $1 answered"
			return 1
		fi
		if curl -fsS -o /dev/null "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	log "$1 did not answer within $3 s"
	return 1
}

# world DIR N: generate + pipeline an N-match world into DIR/store, DIR/work.
world() {
	local dir=$1 n=$2
	log "generating $n matches"
	"$EO" generate --store "$dir/store" --work "$dir/work" --matches "$n" --seed "$SEED" >"$LOGS/generate-$n.log" 2>&1
	log "running the pipeline on $n matches"
	"$EO" pipeline run --store "$dir/store" --work "$dir/work" >"$LOGS/pipeline-$n.log" 2>&1
}

# mint_key DIR: an account and an internal-plan key in DIR/work; prints the key.
mint_key() {
	local acct
	acct=$("$EO" keys account create --name bench-edge --store "$1/store" --work "$1/work" | awk '/^account /{print $2; exit}')
	"$EO" keys create --account "$acct" --plan internal --store "$1/store" --work "$1/work" | tail -n 1
}

# serve DIR LOG [ENV=VALUE...]: start `eo serve` on a free port; sets SERVE_PID and SERVE_URL.
serve() {
	local dir=$1 logf=$2 port
	shift 2
	port=$(free_port)
	# shellcheck disable=SC2086
	env "$@" "$EO" serve --store "$dir/store" --work "$dir/work" --addr "127.0.0.1:$port" ${SERVE_FLAGS:-} >"$logf" 2>&1 &
	SERVE_PID=$!
	PIDS+=("$SERVE_PID")
	SERVE_URL="http://127.0.0.1:$port"
	wait_http "$SERVE_URL/ready" "$SERVE_PID" 900
}

# load_stats LOG PID: "elapsed|VmRSS MiB|live heap MiB" of a serving edge.
load_stats() {
	local el rss heap
	el=$(grep -m1 'snapshot loaded' "$1" | sed -n 's/.*elapsed=\([^ ]*\).*/\1/p')
	heap=$(grep -m1 'snapshot loaded' "$1" | sed -n 's/.*heap_alloc_bytes=\([0-9]*\).*/\1/p')
	rss=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$2/status")
	echo "$el|$rss|$(awk -v h="${heap:-0}" 'BEGIN { printf "%.0f", h / 1048576 }')"
}

# bare BODY: start `eo bench-bare` serving BODY; sets BARE_PID and BARE_URL.
bare() {
	local port
	port=$(free_port)
	"$EO" bench-bare --addr "127.0.0.1:$port" --body "$1" >"$LOGS/bare-$port.log" 2>&1 &
	BARE_PID=$!
	PIDS+=("$BARE_PID")
	BARE_URL="http://127.0.0.1:$port"
	wait_http "$BARE_URL/health" "$BARE_PID" 30
}

# bench NAME URL: warm up, then wrk; prints "req/s|p99 ms|non-2xx".
bench() {
	local name=$1 url=$2 out=$LOGS/wrk-$1.txt
	wrk -t2 -c32 -d"$WARMUP" -H "Authorization: Bearer $KEY" "$url" >/dev/null
	# WRK_SCRIPT: a wrk Lua script for the measured run (warm-up without).
	# shellcheck disable=SC2086
	wrk $WRK_ARGS ${WRK_SCRIPT:+-s "$WRK_SCRIPT"} --latency -H "Authorization: Bearer $KEY" "$url" >"$out"
	wrk_stats <"$out"
}

# wrk_stats: "req/s|p99 ms|non-2xx" of the `wrk --latency` output on stdin.
wrk_stats() {
	awk '
		function ms(v) {
			if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
			if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
			if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
			return v
		}
		/Requests\/sec:/ { rps = $2 }
		$1 == "99%" { p99 = ms($2) }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		END { printf "%.0f|%.2f|%d\n", rps, p99, bad }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f %%", 100 * a / b }'; }

# fetch URL FILE: the body of one authenticated GET (fails on a non-200).
fetch() { curl -fsS -H "Authorization: Bearer $KEY" -o "$2" "$1"; }

# get PATH: the body of one authenticated GET of PATH on the edge that
# serve or up started (SERVE_URL); fails on a non-200.
get() { curl -fsS -H "Authorization: Bearer $KEY" "$SERVE_URL$1"; }

# settle: wait (up to 15 s) until the usage backlog of the edge that serve or
# up started is under one export file (eo_usage_events_retained < 100000).
# The edge exports its usage paced, a share of one processor at a time, so
# the export of a round's events runs on after the round: without the wait
# it would run in the bare handler's round that follows.
settle() {
	local i n
	for ((i = 0; i < 150; i++)); do
		n=$(get /metrics | awk '$1 == "eo_usage_events_retained" { printf "%d", $2 }')
		[[ -z $n || $n -lt 100000 ]] && return 0
		sleep 0.1
	done
}

# first_id PATH: the id of the first item of the list at PATH (see get).
first_id() { get "$1" | jq -r '.data[0].id'; }

# up DIR LOG SLOTS [SPEED]: start `eo up` on DIR's world with SLOTS replay
# slots played at SPEED (default LIVE_SPEED); sets SERVE_PID and SERVE_URL.
up() {
	local dir=$1 logf=$2 slots=$3 speed=${4:-$LIVE_SPEED} port
	port=$(free_port)
	"$EO" up --store "$dir/store" --work "$dir/work" --addr "127.0.0.1:$port" --schedule off --land-every 0 \
		--live-matches "$slots" --live-speed "$speed" >"$logf" 2>&1 &
	SERVE_PID=$!
	PIDS+=("$SERVE_PID")
	SERVE_URL="http://127.0.0.1:$port"
	wait_http "$SERVE_URL/ready" "$SERVE_PID" 900
}

# events: live events the served view has applied (operator metrics).
events() {
	get /metrics | awk '$1 == "eo_live_events_total" { print $2 }'
}

# ratio2 A B: A / B as "1.4x" (p99 of the edge against the bare handler's).
ratio2() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }

# mixed_lua FILE PATH...: a wrk script that sends the PATHs in turn.
mixed_lua() {
	local f=$1 p
	shift
	{
		echo "local paths = {"
		for p in "$@"; do echo "  \"$p\","; done
		echo "}"
		echo "local i = 0"
		echo "request = function()"
		echo "  i = i + 1"
		echo "  return wrk.format(\"GET\", paths[(i % #paths) + 1])"
		echo "end"
	} >"$f"
}
