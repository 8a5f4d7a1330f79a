# scripts/lib/procs.sh — the background processes of a test or bench script: a work folder,
# the PIDs to stop when the script exits, and free loopback ports. Source it, then:
#
#   procs_init NAME      WORK=a new folder under $TMPDIR (or /tmp); PIDS=(); on exit every PID
#                        in PIDS is stopped and waited for, and WORK is removed
#   cmd & PIDS+=($!)     a process to stop on exit
#   free_port            prints a free TCP port on 127.0.0.1
#
# Used by e2e/widget/run.sh, e2e/sites/run.sh, bench/proxy.sh and bench/replicas.sh.

procs_init() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/docent-$1.XXXXXX")"
  PIDS=()
  trap procs_cleanup EXIT
}

procs_cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
