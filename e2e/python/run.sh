#!/usr/bin/env bash
# Python end-to-end tests: the openai SDK against docent serve, LiteLLM proxy as upstream, and the
# mcp SDK against `docent mcp` (stdio) and `docent serve` (/mcp).
# Installs requirements idempotently, builds the binaries, runs pytest (processes are started and
# stopped by the fixtures on 127.0.0.1). Bounded: pip 600 s, build 1800 s, tests 600 s.
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(cd ../.. && pwd)"

if ! python3 -c "import openai, pytest, httpx, litellm, mcp" 2>/dev/null || ! command -v litellm >/dev/null; then
  echo "installing e2e/python/requirements.txt"
  timeout 600 python3 -m pip install -q -r requirements.txt
fi
# litellm's proxy extras (uvicorn, fastapi, ...) must be importable.
python3 -c "import litellm.proxy.proxy_server" 2>/dev/null || timeout 600 python3 -m pip install -q 'litellm[proxy]'

# shellcheck source=scripts/lib/bins.sh
. "$ROOT/scripts/lib/bins.sh"
(cd "$ROOT" && build_bins)

timeout 600 python3 -m pytest -q -p no:cacheprovider "$@" .
