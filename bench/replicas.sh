#!/usr/bin/env bash
# Replica benchmarks: what Redis-backed limits ([limits] store) add per request compared with
# in-process limits (same run, alternating rounds), and requests/s of 1 vs 2 docent serve
# replicas sharing their limits in Redis. Starts the upstream double (--stamp), its own
# redis-server (loopback, own port and data folder, no persistence) and the proxies itself, and
# stops them on exit. Prints Markdown for BENCHMARKS.md.
#
# Env: REQUESTS (2000 per setup and round), ROUNDS (3), WARMUP (300), CONCURRENCY (64),
#      DELAY_MS (2: pause between the double's chunks), TP_REQUESTS (6000), TP_CONCURRENCY (128),
#      PROFILE (release-native; dev for a quick run), SKIP_BUILD=1 (use built binaries).
# Timing run: bash bench/replicas.sh
# Smoke test: PROFILE=dev REQUESTS=200 ROUNDS=1 WARMUP=50 TP_REQUESTS=400 bash bench/replicas.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
REQUESTS="${REQUESTS:-2000}"; ROUNDS="${ROUNDS:-3}"; WARMUP="${WARMUP:-300}"
CONCURRENCY="${CONCURRENCY:-64}"; DELAY_MS="${DELAY_MS:-2}"
TP_REQUESTS="${TP_REQUESTS:-6000}"; TP_CONCURRENCY="${TP_CONCURRENCY:-128}"
PROFILE="${PROFILE:-release-native}"
OUTDIR="$PROFILE"; [ "$PROFILE" = dev ] && OUTDIR=debug
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/$OUTDIR"
command -v redis-server >/dev/null || { echo "redis-server is missing: bash scripts/setup" >&2; exit 2; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  timeout 3600 cargo build -q --profile "$PROFILE" -p docent-bench --bin docent-upstream-double --bin docent-loadgen
  timeout 3600 cargo build -q --profile "$PROFILE" -p docent-proxy --bin docent-proxy
fi

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# shellcheck source=scripts/lib/procs.sh
. "$ROOT/scripts/lib/procs.sh"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
procs_init replicas
up() { # url: wait up to 20 s
  for _ in $(seq 100); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.2; done
  echo "timed out waiting for $1" >&2; return 1
}

DP="$(free_port)"; RP="$(free_port)"
"$BIN/docent-upstream-double" --listen "127.0.0.1:$DP" --delay-ms "$DELAY_MS" --no-record --stamp >"$WORK/double.log" 2>&1 &
PIDS+=($!)
mkdir "$WORK/redis"
redis-server --port "$RP" --bind 127.0.0.1 --dir "$WORK/redis" --save "" --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
up "http://127.0.0.1:$DP/healthz"

# proxy NAME STORE_LINE: a docent serve on a free port; sets URL to its chat URL
proxy() {
  local p; p="$(free_port)"
  bench_proxy_toml "$p" "$DP" "" "$2" >"$WORK/$1.toml"
  RUST_LOG=warn "$BIN/docent-proxy" --config "$WORK/$1.toml" >"$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  up "http://127.0.0.1:$p/healthz"
  URL="http://127.0.0.1:$p/v1/chat/completions"
}
proxy local ""; LOCAL="$URL"
proxy redis1 "store = \"redis://127.0.0.1:$RP\""; R1="$URL"
proxy redis2 "store = \"redis://127.0.0.1:$RP\""; R2="$URL"

echo "## Replicas and Redis ($(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo
echo "Command: \`PROFILE=$PROFILE REQUESTS=$REQUESTS ROUNDS=$ROUNDS WARMUP=$WARMUP CONCURRENCY=$CONCURRENCY DELAY_MS=$DELAY_MS TP_REQUESTS=$TP_REQUESTS TP_CONCURRENCY=$TP_CONCURRENCY bash bench/replicas.sh\`."
echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg). Everything (load generator, double, redis-server, every replica) runs on this one machine's $(nproc) cores."
echo
echo "### Added latency of Redis-backed limits"
echo
echo "Streamed chat requests (~36 upstream chunks $DELAY_MS ms apart) through docent serve with in-process limits and through one with \`[limits] store = \"redis://...\"\` (before its first chunk each request waits for three Redis round trips: the guard's request bucket, the chat handler's token charge and the stream-slot lease; the refund and the lease release are sent in the background)."
echo
timeout 1800 "$BIN/docent-loadgen" compare --a "$LOCAL" --b "$R1" --a-label "in-process limits" --b-label "Redis limits" \
  --concurrency "$CONCURRENCY" --requests "$REQUESTS" --rounds "$ROUNDS" --warmup "$WARMUP"
echo
echo "### Requests/s: 1 vs 2 replicas (Redis limits)"
echo
echo "$TP_CONCURRENCY concurrent streams in total, $TP_REQUESTS requests, spread evenly over the replicas."
echo
echo "| replicas | requests | errors | requests/s | total p50 (ms) | total p99 (ms) |"
echo "|---|---|---|---|---|---|"
timeout 1800 "$BIN/docent-loadgen" throughput --url "$R1" --concurrency "$TP_CONCURRENCY" --requests "$TP_REQUESTS"
timeout 1800 "$BIN/docent-loadgen" throughput --url "$R1" --url "$R2" --concurrency "$TP_CONCURRENCY" --requests "$TP_REQUESTS"
