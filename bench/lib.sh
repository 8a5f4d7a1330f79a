# bench/lib.sh — shared by bench/proxy.sh and bench/replicas.sh. Source it.

# bench_proxy_toml PORT UPSTREAM_PORT SERVE_LINE [LIMITS_LINE...]: prints a docent serve config
# listening on 127.0.0.1:PORT that relays chat to the upstream double on UPSTREAM_PORT, with
# limits far above any bench load. SERVE_LINE (may be empty) goes into [serve], each
# LIMITS_LINE into [limits].
bench_proxy_toml() {
  local port="$1" upstream="$2" serve_line="$3"
  shift 3
  cat <<TOML
[serve]
listen = "127.0.0.1:$port"
$serve_line
[serve.chat]
provider = "double"
model = "bench-model"
[providers.double]
kind = "openai-compatible"
base_url = "http://127.0.0.1:$upstream/v1"
[limits]
max_body_bytes = 1048576
max_input_tokens = 100000
requests_per_minute_per_ip = 10000000
tokens_per_minute_per_ip = 2000000000
requests_per_minute = 10000000
tokens_per_minute = 2000000000
TOML
  if (($#)); then printf '%s\n' "$@"; fi
}
