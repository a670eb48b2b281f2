#!/usr/bin/env bash
# The service while the snapshot store hangs: MinIO stopped with SIGSTOP
# (connections are accepted, nothing answers).
#
# TARGET=up (the default): `eo up` on a MinIO store with the live replay
# running, MinIO frozen for FREEZE seconds and resumed. Prints the edge's
# applied live events (eo_live_events_total) every 10 s, then how many
# records the lander landed and what its spool holds.
#
# TARGET=pipeline: `eo pipeline run --full` on a MinIO store, MinIO frozen
# before the run starts (FREEZE_AT empty) or as soon as the run logs the
# step FREEZE_AT (e.g. stage, "match parts": the publish follows it). Prints
# how long the run took from the freeze to its exit, its exit status and
# last error line, and whether the pointer stayed where it was.
#
#   scripts/bench-store-freeze.sh
#   EO_BIN=/path/to/eo FREEZE=150 MATCHES=300 LIVE_SLOTS=8 LIVE_SPEED=20 scripts/bench-store-freeze.sh
#   TARGET=pipeline FREEZE_AT="match parts" scripts/bench-store-freeze.sh
#
# Needs minio (go install github.com/minio/minio@latest) and curl.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-store-freeze
BENCH_TOOLS="curl minio"
MATCHES=${MATCHES:-300}
LIVE_SLOTS=${LIVE_SLOTS:-8}
LIVE_SPEED=${LIVE_SPEED:-20}
FREEZE=${FREEZE:-150}
TARGET=${TARGET:-up}
FREEZE_AT=${FREEZE_AT:-}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

user=eoadmin secret=eoadmin-secret
s3port=$(free_port)
MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$secret minio server "$TMPROOT/minio" --address "127.0.0.1:$s3port" \
	--console-address "127.0.0.1:$(free_port)" >"$LOGS/minio.log" 2>&1 &
MINIO_PID=$!
PIDS+=("$MINIO_PID")
trap 'kill -CONT "$MINIO_PID" 2>/dev/null; cleanup' EXIT # a stopped process would not take the TERM
wait_http "http://127.0.0.1:$s3port/minio/health/live" "$MINIO_PID" 60
for try in 1 2 3 4 5; do # MinIO may answer 503 for a moment after it is live
	curl -fsS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$user:$secret" -X PUT "http://127.0.0.1:$s3port/eolive" >/dev/null && break
	((try < 5)) || exit 1
	sleep 1
done
export EO_S3_ENDPOINT=127.0.0.1:$s3port EO_S3_ACCESS_KEY=$user EO_S3_SECRET_KEY=$secret

if [[ $TARGET == pipeline ]]; then
	work=$TMPROOT/work
	"$EO" generate --store s3://eolive/w --work "$work" --matches "$MATCHES" >"$LOGS/generate.log" 2>&1
	"$EO" pipeline run --store s3://eolive/w --work "$work" >"$LOGS/first-run.log" 2>&1
	pointer() { "$EO" snapshots --json --store s3://eolive/w --work "$work" | jq -r '.[] | select(.state == "current") | .snapshot_id'; }
	before=$(pointer)
	[[ -z $FREEZE_AT ]] && kill -STOP "$MINIO_PID"
	start=$SECONDS
	"$EO" pipeline run --full --store s3://eolive/w --work "$work" >"$LOGS/run.log" 2>&1 &
	run_pid=$!
	if [[ -n $FREEZE_AT ]]; then
		until grep -q "step=\"\?$FREEZE_AT\"\? " "$LOGS/run.log" || ! kill -0 "$run_pid" 2>/dev/null; do
			sleep 0.1
		done
		kill -STOP "$MINIO_PID"
	fi
	frozen=$SECONDS
	status=0
	wait "$run_pid" || status=$?
	end=$SECONDS
	kill -CONT "$MINIO_PID"
	when="before the run"
	[[ -n $FREEZE_AT ]] && when="after step $FREEZE_AT"
	echo "frozen $when: the run exited $status, $((end - frozen)) s after the freeze ($((end - start)) s in all)"
	echo "last line: $(grep -v '^ ' "$LOGS/run.log" | tail -n 1)"
	after=$(pointer)
	echo "pointer: $before before, $after after"
	exit 0
fi

port=$(free_port)
work=$TMPROOT/work
"$EO" up --store s3://eolive/w --work "$work" --matches "$MATCHES" --live-matches "$LIVE_SLOTS" \
	--live-speed "$LIVE_SPEED" --schedule off --addr "127.0.0.1:$port" >"$LOGS/up.log" 2>&1 &
UP_PID=$!
PIDS+=("$UP_PID")
wait_http "http://127.0.0.1:$port/ready" "$UP_PID" 300
acct=$("$EO" keys account create --name ops --work "$work" | awk '/^account /{print $2; exit}')
key=$("$EO" keys create --account "$acct" --plan internal --work "$work" | tail -n 1)
sleep 2 # the edge's keyring reloads

sample() {
	local n
	n=$(curl -s -m 5 -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics" |
		awk '/^eo_live_events_total/ {s += $2} END {print s + 0}')
	echo "t=$1 live_events=$n"
}

sleep 10
sample "before the freeze"
kill -STOP "$MINIO_PID"
for ((t = 10; t <= FREEZE; t += 10)); do
	sleep 10
	sample "frozen+${t}s"
done
kill -CONT "$MINIO_PID"
for t in 10 20 30 40 50 60; do
	sleep 10
	sample "resumed+${t}s"
done
stop "$UP_PID"
records=$(grep -o 'live events landed.*records=[0-9]*' "$LOGS/up.log" | sed 's/.*records=//' | awk '{s += $1} END {print s + 0}')
echo "landings: $(grep -c 'live events landed' "$LOGS/up.log"), records landed: ${records:-0}"
echo "spool segments left: $(find "$work/live-spool" -name '*.ndjson' 2>/dev/null | wc -l)"
echo "WARN lines: $(grep -c 'level=WARN' "$LOGS/up.log")"
