#!/usr/bin/env bash
# e2e/widget/run.sh — browser end-to-end tests of the docent widget.
#
# Builds what it needs (the widget, the docent CLI, the upstream double), builds a small index of
# e2e/widget/site/docs, starts on 127.0.0.1: the upstream double, `docent serve` twice (with the
# double as upstream, and with no chat model), and a static server with the test pages; runs
# e2e/widget/widget.test.mjs (node --test + playwright-core + /usr/bin/chromium); stops everything.
#
#   e2e/widget/run.sh                 run the tests (also writes docs/img/widget-answer.png)
#   e2e/widget/run.sh --measure       run e2e/widget/measure.mjs instead (sizes, search p50/p95 with
#                                     vector and lexical parts, query-rewrite latency)
#   e2e/widget/run.sh --trunk         `trunk build --release` (Trunk.toml + index.html) with the test
#                                     site's index, then e2e/widget/trunk.test.mjs on dist/trunk
#
# Environment: DOCENT_E2E_SKIP_BUILD=1 (use existing builds), DOCENT_E2E_WIDGET_BUILT=1 (use the
# dist/widget/ a release scripts/build-widget just wrote; scripts/test sets it after its widget-build
# suite passed: the widget's three cargo builds recompile each time), DOCENT_E2E_DEV=1 (debug widget build),
# CARGO_TARGET_DIR (where cargo puts the docent binaries; default target),
# CHROMIUM (default /usr/bin/chromium), DOCENT_E2E_TIMEOUT (seconds for the test run, default 600).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
HERE="$ROOT/e2e/widget"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
# shellcheck source=scripts/lib/bins.sh
. "$ROOT/scripts/lib/bins.sh"
MODE="test"
case "${1:-}" in
  --measure) MODE="measure" ;;
  --trunk) MODE="trunk" ;;
  "") ;;
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "run.sh: unknown option '$1' (use --measure, --trunk or --help)" >&2; exit 2 ;;
esac

say() { printf '\033[1me2e/widget:\033[0m %s\n' "$*"; }
die() { printf 'e2e/widget: error: %s\n' "$*" >&2; exit 1; }

command -v node >/dev/null || die "node not found (apt-get install nodejs npm)"
[[ -x "${CHROMIUM:-/usr/bin/chromium}" ]] || die "chromium not found at ${CHROMIUM:-/usr/bin/chromium} (apt-get install chromium)"

# npm dependencies (playwright-core and axe-core; never `playwright install`).
if [[ ! -d e2e/node_modules/playwright-core || ! -d e2e/node_modules/axe-core ]]; then
  say "installing npm dependencies into e2e/node_modules"
  if [[ -f e2e/package-lock.json ]]; then (cd e2e && npm ci --no-audit --no-fund); else (cd e2e && npm install --no-audit --no-fund); fi
fi

if [[ "$MODE" == "trunk" ]]; then
  TRUNK="$(command -v trunk || true)"
  [[ -n "$TRUNK" ]] || die "trunk not found (cargo install trunk --version 0.21.14 --locked; scripts/setup installs it)"
  if [[ "${DOCENT_E2E_SKIP_BUILD:-}" != "1" ]]; then build_bins; fi
  [[ -x "$BIN/docent" ]] || die "$BIN/docent missing (cargo build --workspace --bins)"
  say "indexing e2e/widget/site/docs into dist/dev-index.bin (Trunk's hook copies it next to the page)"
  mkdir -p dist
  "$BIN/docent" index "$HERE/site/docs" --out dist/dev-index.bin --embed none --base-url /docs/ >/dev/null \
    || die "docent index failed"
  say "trunk build --release ($("$TRUNK" --version))"
  timeout "${DOCENT_E2E_TIMEOUT:-600}" "$TRUNK" build --release || die "trunk build --release failed"
  rm -f dist/dev-index.bin
  say "running the Trunk page smoke test"
  NODE_PATH="$ROOT/e2e/node_modules" timeout "${DOCENT_E2E_TIMEOUT:-600}" node --test --test-timeout=120000 "$HERE/trunk.test.mjs"
  exit $?
fi

if [[ "${DOCENT_E2E_SKIP_BUILD:-}" != "1" ]]; then
  if [[ "${DOCENT_E2E_WIDGET_BUILT:-}" == "1" && "$MODE" == "test" && "${DOCENT_E2E_DEV:-}" != "1" ]]; then
    say "using the widget in dist/widget/ (DOCENT_E2E_WIDGET_BUILT=1)"
  elif [[ "${DOCENT_E2E_DEV:-}" == "1" ]]; then
    say "building the widget (debug)"; scripts/build-widget --dev
  else
    say "building the widget"; scripts/build-widget $([[ "$MODE" == "measure" ]] && echo --bench)
  fi
  say "building docent and the upstream double"
  build_bins
fi
DOCENT="$BIN/docent"
DOUBLE="$BIN/docent-upstream-double"
[[ -x "$DOCENT" ]] || die "$DOCENT missing (cargo build --workspace --bins)"
[[ -x "$DOUBLE" ]] || die "$DOUBLE missing (cargo build --workspace --bins)"
[[ -f dist/widget/docent-widget_bg.wasm ]] || die "dist/widget is empty; run scripts/build-widget"

# shellcheck source=scripts/lib/procs.sh
. "$ROOT/scripts/lib/procs.sh"
procs_init e2e-widget


# wait_http <url> <log> : wait up to 30 s for any HTTP answer
wait_http() {
  for _ in $(seq 1 150); do
    if curl -s -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "---- $2" >&2; cat "$2" >&2 || true
  die "$1 did not come up"
}

SITE_PORT="$(free_port)"; UP_PORT="$(free_port)"; PROXY_PORT="$(free_port)"; NOCHAT_PORT="$(free_port)"; CACHED_PORT="$(free_port)"; VEC_PORT="$(free_port)"
SITE="http://127.0.0.1:$SITE_PORT"

if [[ "$MODE" == "measure" ]]; then
  # A ~100-page site: the Cargo book shipped with the Rust toolchain, with 384-d local embeddings
  # when the local model is available (else lexical only, and the size is reported as such).
  CORPUS="${DOCENT_MEASURE_CORPUS:-$(rustc --print sysroot)/share/doc/rust/html/cargo}"
  [[ -d "$CORPUS" ]] || die "corpus $CORPUS not found (set DOCENT_MEASURE_CORPUS to a built docs folder)"
  # DOCENT_MEASURE_EMBED=local gives real 384-d vectors (slow on a small machine); the default
  # "none" indexes lexically and measure.mjs adds the bytes of binary vectors (dims/8 + 4 per
  # chunk, docent index's default). DOCENT_MEASURE_INDEX=FILE measures a prebuilt index instead.
  if [[ -n "${DOCENT_MEASURE_INDEX:-}" ]]; then
    [[ -f "$DOCENT_MEASURE_INDEX" ]] || die "DOCENT_MEASURE_INDEX=$DOCENT_MEASURE_INDEX is not a file"
    cp "$DOCENT_MEASURE_INDEX" "$WORK/index.bin"
    # A split entry's shards sit next to it, named after its stem.
    STEM="$(basename "$DOCENT_MEASURE_INDEX" .bin)"
    find "$(dirname "$DOCENT_MEASURE_INDEX")" -maxdepth 1 -name "$STEM-[ptv]-*.bin" -exec cp {} "$WORK/" \;
    EMBED="$("$DOCENT" inspect "$WORK/index.bin" | awk '$1 == "embeddings" { print $2; exit }')"
    # Vectors of the upstream double's model: a proxy embeds each question with it (hybrid).
    if "$DOCENT" inspect "$WORK/index.bin" | grep -Eq '^ *embeddings +openai double-bow '; then
      mkdir -p "$WORK/vsplit" && export DOCENT_E2E_VSPLIT_DIR="$WORK/vsplit" DOCENT_MEASURE_VEC_INDEX="$WORK/index.bin"
    fi
    say "measuring the prebuilt index $DOCENT_MEASURE_INDEX (embeddings ${EMBED:-none})"
    export DOCENT_MEASURE_EMBED="${EMBED:-none}"
  else
    EMBED="${DOCENT_MEASURE_EMBED:-none}"
    say "indexing $CORPUS (embed $EMBED)"
    "$DOCENT" index "$CORPUS" --out "$WORK/index.bin" --embed "$EMBED" >"$WORK/index.log" 2>&1 \
      || { cat "$WORK/index.log" >&2; die "docent index failed"; }
  fi
  export DOCENT_MEASURE_CHUNK_COUNT="$("$DOCENT" inspect "$WORK/index.bin" 2>/dev/null | sed -n 's/.*chunks[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -1)"
  export DOCENT_MEASURE_CORPUS="$CORPUS"
  export COI=1 GZIP=1
else
  say "indexing e2e/widget/site/docs"
  "$DOCENT" index "$HERE/site/docs" --out "$WORK/index.bin" --embed none --base-url /docs/ >"$WORK/index.log" 2>&1 \
    || { cat "$WORK/index.log" >&2; die "docent index failed"; }
  # The same pages as one docs version (the dialog shows its scope picker), and the offline
  # demo site (its pages are checked with axe-core too).
  "$DOCENT" index "$HERE/site/docs" --out "$WORK/scoped.bin" --embed none --base-url /docs/ --namespace v2 >>"$WORK/index.log" 2>&1 \
    || { cat "$WORK/index.log" >&2; die "docent index --namespace failed"; }
  export DOCENT_E2E_SCOPED_INDEX="$WORK/scoped.bin"
  # docent's own docs as a split index (an entry and shards fetched by need).
  mkdir -p "$WORK/split"
  "$DOCENT" index "$ROOT/docs" --out "$WORK/split/index.bin" --embed none --base-url /docs/ --split always >>"$WORK/index.log" 2>&1 \
    || { cat "$WORK/index.log" >&2; die "docent index --split failed"; }
  export DOCENT_E2E_SPLIT_DIR="$WORK/split"
  # Hostile docs pages (e2e/widget/hostile: script, event handlers, javascript: links, raw HTML,
  # and a title and headings of 200 KB, written here from @LONG@ so the repository holds no such
  # file), in an index of their own.
  mkdir -p "$WORK/hostile-docs" "$WORK/hostile"
  node -e 'const fs = require("fs"); const [src, dst] = process.argv.slice(1);
    for (const f of fs.readdirSync(src)) fs.writeFileSync(`${dst}/${f}`, fs.readFileSync(`${src}/${f}`, "utf8").replaceAll("@LONG@", "W".repeat(200000)));' \
    "$HERE/hostile" "$WORK/hostile-docs"
  "$DOCENT" index "$WORK/hostile-docs" --out "$WORK/hostile/index.bin" --embed none --base-url /hostile/ >>"$WORK/index.log" 2>&1 \
    || { cat "$WORK/index.log" >&2; die "docent index of the hostile pages failed"; }
  export DOCENT_E2E_HOSTILE_DIR="$WORK/hostile"
  say "writing the offline demo site (docent demo --offline)"
  "$DOCENT" demo --offline "$WORK/demo" --embed none --docs "$ROOT/docs" --widget-dir "$ROOT/dist/widget" >"$WORK/demo.log" 2>&1 \
    || { cat "$WORK/demo.log" >&2; die "docent demo --offline failed"; }
  export DOCENT_E2E_DEMO="$WORK/demo"
fi
export DOCENT_E2E_INDEX="$WORK/index.bin"

say "starting the upstream double, docent serve (x2) and the static server"
"$DOUBLE" --listen "127.0.0.1:$UP_PORT" --delay-ms 15 >"$WORK/double.log" 2>&1 & PIDS+=($!)
if [[ "$MODE" != "measure" ]]; then
  # docent's own docs as a split index with vectors (format 7: the nearest clusters' vector
  # shards fetched by need), embedded by the double's bag-of-words model; a fourth proxy embeds
  # the questions with the same model.
  wait_http "http://127.0.0.1:$UP_PORT/_requests" "$WORK/double.log"
  mkdir -p "$WORK/vsplit"
  OPENAI_API_KEY=e2e-double "$DOCENT" index "$ROOT/docs" --out "$WORK/vsplit/index.bin" --base-url /docs/ --split always \
    --embed openai --model double-bow --dims 384 --embed-base-url "http://127.0.0.1:$UP_PORT/v1" >>"$WORK/index.log" 2>&1 \
    || { cat "$WORK/index.log" >&2; die "docent index --split with vectors failed"; }
  export DOCENT_E2E_VSPLIT_DIR="$WORK/vsplit"
fi
# Moderation on (the double flags FLAGME) so the content_flagged path is exercised.
printf '[moderation]\nenabled = true\nprovider = "upstream"\n' >"$WORK/proxy.toml"
# Analytics on: the widget posts each question's outcome; `docent report` reads the file.
printf '[analytics]\nenabled = true\npath = "%s"\n' "$WORK/analytics.jsonl" >>"$WORK/proxy.toml"
export DOCENT_E2E_ANALYTICS="$WORK/analytics.jsonl" DOCENT_E2E_DOCENT="$DOCENT"
# The latency measurement asks dozens of questions from one IP in a minute: lift the per-IP limit
# (the defaults, 30 requests/min, are what a public site wants, not a benchmark).
if [[ "$MODE" == "measure" ]]; then
  printf '[limits]\nrequests_per_minute_per_ip = 100000\nrequests_per_minute = 100000\n' >>"$WORK/proxy.toml"
fi
"$DOCENT" serve --config "$WORK/proxy.toml" --listen "127.0.0.1:$PROXY_PORT" --upstream "http://127.0.0.1:$UP_PORT/v1" \
  --index "$WORK/index.bin" --allow-origin "$SITE" >"$WORK/proxy.log" 2>&1 & PIDS+=($!)
"$DOCENT" serve --listen "127.0.0.1:$NOCHAT_PORT" --index "$WORK/index.bin" \
  --allow-origin "$SITE" >"$WORK/nochat.log" 2>&1 & PIDS+=($!)
# A third proxy with the answer cache on (its own, so the other tests never get cached answers).
printf '[cache]\nenabled = true\n' >"$WORK/cached.toml"
"$DOCENT" serve --config "$WORK/cached.toml" --listen "127.0.0.1:$CACHED_PORT" --upstream "http://127.0.0.1:$UP_PORT/v1" \
  --index "$WORK/index.bin" --allow-origin "$SITE" >"$WORK/cached.log" 2>&1 & PIDS+=($!)
if [[ -n "${DOCENT_E2E_VSPLIT_DIR:-}" ]]; then
  printf '[serve.embeddings]\nprovider = "upstream"\nmodel = "double-bow"\ndimensions = 384\n' >"$WORK/vec.toml"
  if [[ "$MODE" == "measure" ]]; then
    printf '[limits]\nrequests_per_minute_per_ip = 100000\nrequests_per_minute = 100000\n' >>"$WORK/vec.toml"
  fi
  "$DOCENT" serve --config "$WORK/vec.toml" --listen "127.0.0.1:$VEC_PORT" --upstream "http://127.0.0.1:$UP_PORT/v1" \
    --index "${DOCENT_MEASURE_VEC_INDEX:-$WORK/vsplit/index.bin}" --allow-origin "$SITE" >"$WORK/vec.log" 2>&1 & PIDS+=($!)
fi
PORT="$SITE_PORT" COI="${COI:-}" GZIP="${GZIP:-}" node "$HERE/server.mjs" >"$WORK/site.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$UP_PORT/_requests" "$WORK/double.log"
wait_http "http://127.0.0.1:$PROXY_PORT/healthz" "$WORK/proxy.log"
wait_http "http://127.0.0.1:$NOCHAT_PORT/healthz" "$WORK/nochat.log"
wait_http "http://127.0.0.1:$CACHED_PORT/healthz" "$WORK/cached.log"
wait_http "$SITE/page" "$WORK/site.log"
if [[ -n "${DOCENT_E2E_VSPLIT_DIR:-}" ]]; then
  wait_http "http://127.0.0.1:$VEC_PORT/healthz" "$WORK/vec.log"
  export DOCENT_E2E_VEC="http://127.0.0.1:$VEC_PORT"
fi

export DOCENT_E2E_SITE="$SITE"
export DOCENT_E2E_PROXY="http://127.0.0.1:$PROXY_PORT"
export DOCENT_E2E_NOCHAT="http://127.0.0.1:$NOCHAT_PORT"
export DOCENT_E2E_CACHED="http://127.0.0.1:$CACHED_PORT"
export DOCENT_E2E_UPSTREAM="http://127.0.0.1:$UP_PORT"
export DOCENT_E2E_SCREENSHOT="${DOCENT_E2E_SCREENSHOT:-$ROOT/docs/img/widget-answer.png}"
export NODE_PATH="$ROOT/e2e/node_modules"
mkdir -p "$(dirname "$DOCENT_E2E_SCREENSHOT")"

status=0
if [[ "$MODE" == "measure" ]]; then
  timeout "${DOCENT_E2E_TIMEOUT:-600}" node "$HERE/measure.mjs" || status=$?
else
  say "running the browser tests"
  timeout "${DOCENT_E2E_TIMEOUT:-600}" node --test --test-concurrency=1 --test-timeout=300000 "$HERE/widget.test.mjs" || status=$?
fi
if [[ "$status" != "0" ]]; then
  for f in proxy nochat vec double site; do echo "---- $f.log (last 30 lines)" >&2; tail -n 30 "$WORK/$f.log" >&2 || true; done
fi
exit "$status"
