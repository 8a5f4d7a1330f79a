#!/usr/bin/env bash
# Proxy benchmarks: added latency of `docent serve` vs the upstream directly at 64 concurrent
# streams, the same through LiteLLM proxy (ratio), and 5,000 concurrent open streams with the
# proxy's RSS. Starts every process itself on 127.0.0.1 and stops them on exit. Prints Markdown
# for BENCHMARKS.md.
#
# Method (added latency): the same streamed chat requests (~2 KB of sources, ~36 SSE chunks
# DELAY_MS apart) at CONCURRENCY in flight, first WARMUP unmeasured requests per target, then
# ROUNDS rounds that alternate upstream-directly and through-docent runs of REQUESTS each (all
# samples pooled). The double runs with --stamp: every chunk carries its wall-clock receive/send
# stamps, so the load generator measures per request the time to first chunk MINUS the double's
# own service time, and every chunk's upstream→client delivery time; the double's pauses and
# timer jitter drop out. Added latency = docent quantile − direct quantile (p50, p99) of those
# per-request overheads. The LiteLLM ratio uses the same measure when LiteLLM passes the stamps
# through, else first-byte time (printed which).
#
# Env: REQUESTS (default 2000), ROUNDS (3), WARMUP (300), LITELLM_REQUESTS (640),
#      CONCURRENCY (64), STREAMS (5000), DELAY_MS (20: pause between the double's chunks, ~50 tokens/s
#      like a real model; 2 = stress),
#      PROFILE (release-native; dev for a quick run), SKIP_BUILD=1 (use already built binaries),
#      SKIP_LITELLM=1,
#      PIN=1: docent serve on a core of its own (taskset -c 1; tokio then runs one worker), the
#      load generator, the double and LiteLLM on the other (taskset -c 0), as when the proxy runs
#      on its own host. Without PIN all share both cores.
# Timing run (quiet machine): PROFILE=release-native bash bench/proxy.sh
# Smoke test:  PROFILE=dev REQUESTS=200 ROUNDS=1 WARMUP=50 LITELLM_REQUESTS=100 STREAMS=300 bash bench/proxy.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
REQUESTS="${REQUESTS:-2000}"
ROUNDS="${ROUNDS:-3}"
WARMUP="${WARMUP:-300}"
LITELLM_REQUESTS="${LITELLM_REQUESTS:-640}"
CONCURRENCY="${CONCURRENCY:-64}"
STREAMS="${STREAMS:-5000}"
DELAY_MS="${DELAY_MS:-20}"
PROFILE="${PROFILE:-release-native}"
PIN="${PIN:-0}"
PIN_CLIENTS=(); PIN_PROXY=()
if [ "$PIN" = 1 ]; then
  command -v taskset >/dev/null || { echo "PIN=1 needs taskset (util-linux)" >&2; exit 2; }
  [ "$(nproc --all)" -ge 2 ] || { echo "PIN=1 needs 2 cores" >&2; exit 2; }
  PIN_CLIENTS=(taskset -c 0); PIN_PROXY=(taskset -c 1)
fi
OUTDIR="$PROFILE"; [ "$PROFILE" = dev ] && OUTDIR=debug
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/$OUTDIR"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  timeout 3600 cargo build -q --profile "$PROFILE" -p docent-bench --bin docent-upstream-double --bin docent-loadgen
  timeout 3600 cargo build -q --profile "$PROFILE" -p docent-proxy --bin docent-proxy
fi

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# shellcheck source=scripts/lib/procs.sh
. "$ROOT/scripts/lib/procs.sh"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
procs_init bench

wait_http() { # url timeout_s
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "timed out waiting for $1" >&2; return 1; }
    sleep 0.2
  done
}

DP="$(free_port)"; PP="$(free_port)"; LP="$(free_port)"
"${PIN_CLIENTS[@]}" "$BIN/docent-upstream-double" --listen "127.0.0.1:$DP" --delay-ms "$DELAY_MS" --no-record --stamp >"$WORK/double.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$DP/healthz" 20

# every open stream is one client connection: stay within [serve] max_connections (12000)
bench_proxy_toml "$PP" "$DP" 'site = "Bench Docs"' 'max_concurrent_streams = 10000' >"$WORK/docent.toml"
RUST_LOG=warn "${PIN_PROXY[@]}" "$BIN/docent-proxy" --config "$WORK/docent.toml" >"$WORK/docent.log" 2>&1 &
PROXY_PID=$!
PIDS+=($PROXY_PID)
wait_http "http://127.0.0.1:$PP/healthz" 20

LITELLM_ARG=()
if [ "${SKIP_LITELLM:-0}" != 1 ] && command -v litellm >/dev/null; then
  cat >"$WORK/litellm.yaml" <<YAML
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: http://127.0.0.1:$DP/v1
      api_key: sk-bench-not-used
general_settings:
  master_key: sk-bench-litellm-master-key
YAML
  LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR LITELLM_TELEMETRY=False "${PIN_CLIENTS[@]}" litellm --config "$WORK/litellm.yaml" --host 127.0.0.1 --port "$LP" --num_workers 1 >"$WORK/litellm.log" 2>&1 &
  PIDS+=($!)
  if wait_http "http://127.0.0.1:$LP/health/liveliness" 120; then
    LITELLM_ARG=(--litellm "http://127.0.0.1:$LP/v1/chat/completions" --litellm-requests "$LITELLM_REQUESTS" --litellm-key sk-bench-litellm-master-key)
  else
    echo "LiteLLM did not start; see below. Continuing without it." >&2
    tail -20 "$WORK/litellm.log" >&2
  fi
fi

echo "## Proxy overhead ($(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo
echo "Command: \`PROFILE=$PROFILE REQUESTS=$REQUESTS ROUNDS=$ROUNDS WARMUP=$WARMUP CONCURRENCY=$CONCURRENCY DELAY_MS=$DELAY_MS LITELLM_REQUESTS=$LITELLM_REQUESTS STREAMS=$STREAMS bash bench/proxy.sh\`."
echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (numbers are only meaningful on an otherwise idle machine)."
echo "Streamed chat requests (~2 KB of sources, ~36 upstream chunks $DELAY_MS ms apart) from docent-loadgen to docent-upstream-double --stamp, directly / through docent serve / through LiteLLM proxy, all on 127.0.0.1 ($(if [ "$PIN" = 1 ]; then echo "PIN=1: docent serve alone on core 1, everything else on core 0"; else echo "load generator, double and proxy share the machine's cores"; fi))."
echo
timeout 1800 "${PIN_CLIENTS[@]}" "$BIN/docent-loadgen" latency \
  --direct "http://127.0.0.1:$DP/v1/chat/completions" \
  --proxy "http://127.0.0.1:$PP/v1/chat/completions" \
  "${LITELLM_ARG[@]}" --concurrency "$CONCURRENCY" --requests "$REQUESTS" --rounds "$ROUNDS" --warmup "$WARMUP"
echo
echo "## Concurrent open streams through docent serve"
echo
timeout 600 "${PIN_CLIENTS[@]}" "$BIN/docent-loadgen" streams --proxy "http://127.0.0.1:$PP/v1/chat/completions" --pid "$PROXY_PID" --count "$STREAMS"
