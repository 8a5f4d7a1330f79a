#!/usr/bin/env bash
# e2e/sites/run.sh — docent in real VitePress and Docusaurus sites, end to end.
#
# 1. scripts/pack (profile dev: the debug docent binary) → the npm tarballs
# 2. per site (e2e/sites/vitepress, e2e/sites/docusaurus: copied into target/e2e-sites/<site>/,
#    whose node_modules is kept between runs): `npm install` of the generator from the npm
#    registry plus docent's tarballs, then the generator's real build (`vitepress build`,
#    `docusaurus build`), which runs the plugin (index the built HTML, --check-anchors, copy)
# 3. serves the built sites statically (serve.mjs) and starts the dev servers (`vitepress dev`,
#    `docusaurus start`), then runs e2e/sites/sites.test.mjs (playwright-core + /usr/bin/chromium)
#
#   e2e/sites/run.sh             build and test both sites
#   e2e/sites/run.sh --measure   build each site with and without docent, print the build time
#                                and output size that docent adds (BENCHMARKS.md)
#
# Environment: DOCENT_SITES=vitepress,docusaurus (which sites), DOCENT_SITES_PROFILE (cargo
# profile for scripts/pack, default dev), CHROMIUM (default /usr/bin/chromium),
# DOCENT_E2E_TIMEOUT (seconds for the browser tests, default 300).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
HERE="$ROOT/e2e/sites"
CACHE="$ROOT/target/e2e-sites"
MODE="test"
case "${1:-}" in
  --measure) MODE="measure" ;;
  "") ;;
  -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "run.sh: unknown option '$1' (use --measure or --help)" >&2; exit 2 ;;
esac
IFS=',' read -r -a SITES <<<"${DOCENT_SITES:-vitepress,docusaurus}"

say() { printf 'e2e/sites: %s\n' "$*"; }
die() { printf 'e2e/sites: error: %s\n' "$*" >&2; exit 1; }
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export NO_UPDATE_NOTIFIER=1 DOCUSAURUS_NO_UPDATE_CHECK=1 BROWSERSLIST_IGNORE_OLD_DATA=1

command -v node >/dev/null || die "node not found (apt-get install nodejs npm)"
[[ -x "${CHROMIUM:-/usr/bin/chromium}" ]] || die "chromium not found at ${CHROMIUM:-/usr/bin/chromium} (apt-get install chromium)"
[[ -f dist/widget/docent-widget_bg.wasm ]] || die "dist/widget is empty: run scripts/build-widget first"
if [[ ! -d e2e/node_modules/playwright-core || ! -d e2e/node_modules/axe-core ]]; then
  say "installing playwright-core and axe-core into e2e/node_modules"
  (cd e2e && npm ci --no-audit --no-fund --loglevel=error)
fi

mkdir -p "$CACHE"
NPM_OUT="$CACHE/npm"
say "packing the npm packages (profile ${DOCENT_SITES_PROFILE:-dev})"
bash scripts/pack --profile "${DOCENT_SITES_PROFILE:-dev}" --out "$NPM_OUT" >"$CACHE/pack.log" 2>&1 \
  || { cat "$CACHE/pack.log" >&2; die "scripts/pack failed"; }
tgz() { ls "$NPM_OUT/$1"-[0-9]*.tgz; }

# the tarballs a site owner's `npm i -D <plugin>` brings in
site_packages() {
  local plugin="$1"
  echo "$(tgz "$plugin") $(tgz docent) $(tgz docent-widget) $(ls "$NPM_OUT"/docent-linux-*.tgz "$NPM_OUT"/docent-darwin-*.tgz 2>/dev/null | tr '\n' ' ')"
}

# prepare_site NAME PLUGIN: the fixture into $CACHE/NAME (keeping node_modules), npm install
prepare_site() {
  local name="$1" plugin="$2" w="$CACHE/$1"
  mkdir -p "$w"
  find "$w" -mindepth 1 -maxdepth 1 ! -name node_modules ! -name package-lock.json -exec rm -rf {} +
  cp -r "$HERE/$name/." "$w/"
  say "$name: npm install (the generator from the registry, docent from dist/npm)"
  # shellcheck disable=SC2046
  (cd "$w" && timeout 900 npm install --no-audit --no-fund --loglevel=error -D $(site_packages "$plugin")) \
    >"$w/npm-install.log" 2>&1 || { cat "$w/npm-install.log" >&2; die "$name: npm install failed"; }
}

# build_site NAME OUTDIR CMD...: runs the build, prints its seconds
build_site() {
  local name="$1" out="$2"; shift 2
  local w="$CACHE/$name" t0 t1
  rm -rf "$w/$out"
  t0=$(date +%s.%N)
  (cd "$w" && timeout 600 "$@") >"$w/build.log" 2>&1 \
    || { tail -n 60 "$w/build.log" >&2; die "$name: $* failed"; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
}

du_kb() { du -sk "$1" | awk '{print $1}'; }

VP_OUT="docs/.vitepress/dist"
DU_OUT="build"
want() { [[ " ${SITES[*]} " == *" $1 "* ]]; }

if [[ "$MODE" == "measure" ]]; then
  for site in "${SITES[@]}"; do
    case "$site" in
      vitepress) prepare_site vitepress docent-vitepress; out="$VP_OUT"; cmd=(node_modules/.bin/vitepress build docs) ;;
      docusaurus) prepare_site docusaurus docusaurus-plugin-docent; out="$DU_OUT"; cmd=(node_modules/.bin/docusaurus build) ;;
      *) die "unknown site $site" ;;
    esac
    build_site "$site" "$out" "${cmd[@]}" >/dev/null # warm-up (caches, first-run compiles)
    plain=(); with=(); step=()
    for _ in 1 2 3; do # alternating, so a busy moment of the shared machine hits both
      plain+=("$(DOCENT_E2E_PLAIN=1 build_site "$site" "$out" "${cmd[@]}")"); plain_kb="$(du_kb "$CACHE/$site/$out")"
      with+=("$(build_site "$site" "$out" "${cmd[@]}")"); with_kb="$(du_kb "$CACHE/$site/$out")"
      step+=("$(grep -o "docent's build step: [0-9.]*" "$CACHE/$site/build.log" | awk '{s+=$NF} END {printf "%.2f", s}')")
    done
    median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
    docent_kb="$(find "$CACHE/$site/$out" -path "*/docent/*" -type f -print0 | du -ck --files0-from=- | tail -1 | awk '{print $1}')"
    index_b="$(find "$CACHE/$site/$out" -path "*/docent/index.bin" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')"
    echo "$site: build median $(median "${plain[@]}") s without docent, $(median "${with[@]}") s with (runs: ${plain[*]} / ${with[*]});" \
      "docent's own step (index + check + copy) median $(median "${step[@]}") s;" \
      "output ${plain_kb} KB → ${with_kb} KB (docent/ folders ${docent_kb} KB, index.bin ${index_b} bytes in all)"
  done
  exit 0
fi

# shellcheck source=scripts/lib/procs.sh
. "$ROOT/scripts/lib/procs.sh"
procs_init e2e-sites
# wait_http URL LOG SECONDS: until the URL answers 200
wait_http() {
  local deadline=$(( $(date +%s) + $3 ))
  while (( $(date +%s) < deadline )); do
    if [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null)" == "200" ]]; then return 0; fi
    sleep 0.5
  done
  echo "---- $2" >&2; tail -n 40 "$2" >&2 || true
  die "$1 did not come up in $3 s"
}

# run_site NAME PLUGIN VAR OUT "BUILD CMD" "DEV CMD": install, build, serve the output statically,
# start the dev server (its command gets --host and --port); exports DOCENT_SITES_<VAR>[_DEV|_DIR]
run_site() {
  local name="$1" plugin="$2" var="$3" out="$4" build="$5" dev="$6" secs port w="$CACHE/$1"
  prepare_site "$name" "$plugin"
  # shellcheck disable=SC2086
  secs="$(build_site "$name" "$out" $build)"
  say "$name: built in ${secs}s; $(grep -o 'docent: indexed.*' "$w/build.log" | head -c 600)"
  port="$(free_port)"
  node "$HERE/serve.mjs" "$w/$out" "$port" >"$WORK/$name-static.log" 2>&1 & PIDS+=($!)
  export "DOCENT_SITES_$var=http://127.0.0.1:$port" "DOCENT_SITES_${var}_DIR=$w"
  port="$(free_port)"
  # shellcheck disable=SC2086
  (cd "$w" && exec $dev --host 127.0.0.1 --port "$port") >"$WORK/$name-dev.log" 2>&1 & PIDS+=($!)
  export "DOCENT_SITES_${var}_DEV=http://127.0.0.1:$port"
}
want vitepress && run_site vitepress docent-vitepress VP "$VP_OUT" \
  "node_modules/.bin/vitepress build docs" "node_modules/.bin/vitepress dev docs --strictPort"
want docusaurus && run_site docusaurus docusaurus-plugin-docent DU "$DU_OUT" \
  "node_modules/.bin/docusaurus build" "node_modules/.bin/docusaurus start --no-open"
[[ -n "${DOCENT_SITES_VP:-}" ]] && wait_http "$DOCENT_SITES_VP/" "$WORK/vitepress-static.log" 30
[[ -n "${DOCENT_SITES_VP_DEV:-}" ]] && wait_http "$DOCENT_SITES_VP_DEV/" "$WORK/vitepress-dev.log" 60
[[ -n "${DOCENT_SITES_DU:-}" ]] && wait_http "$DOCENT_SITES_DU/docs/intro" "$WORK/docusaurus-static.log" 30
[[ -n "${DOCENT_SITES_DU_DEV:-}" ]] && wait_http "$DOCENT_SITES_DU_DEV/docs/intro" "$WORK/docusaurus-dev.log" 240

say "running the browser tests"
export NODE_PATH="$ROOT/e2e/node_modules"
status=0
timeout "${DOCENT_E2E_TIMEOUT:-300}" node --test --test-concurrency=1 --test-timeout=120000 "$HERE/sites.test.mjs" || status=$?
if [[ "$status" != "0" ]]; then
  for f in "$WORK"/*.log; do echo "---- ${f##*/} (last 30 lines)" >&2; tail -n 30 "$f" >&2 || true; done
fi
exit "$status"
