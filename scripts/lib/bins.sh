# scripts/lib/bins.sh — the debug binaries the test scripts run. Source it, then:
#
#   build_bins           docent, docent-proxy, docent-upstream-double and docent-loadgen
#                        (target/debug, or $CARGO_TARGET_DIR/debug), in one cargo call,
#                        bounded by DOCENT_BUILD_TIMEOUT seconds (default 1800)
#
# One `cargo build --workspace --bins` resolves features over the whole workspace, as `cargo
# test --workspace` (the native suite) does, so after it only ~16 crates are compiled again.
# A per-package build (`cargo build -p docent-cli`) resolves features for that package alone:
# other feature sets of proc-macro2, serde, docent-core... and so other builds of everything
# above them, ~140 crates each (candle, reqwest, html5ever, axum) and another set for each
# `-p` combination the scripts used (session 25, DEVELOPERS.md "CI time").
#
# Used by scripts/test (demo-offline), scripts/pack (dev profile), e2e/widget/run.sh and
# e2e/python/run.sh.

build_bins() {
  timeout "${DOCENT_BUILD_TIMEOUT:-1800}" cargo build -q --workspace --bins
}
