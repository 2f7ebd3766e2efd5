# shellcheck shell=bash
# Sourced by the scripts that start servers (e2e/lib.sh, hack/consistency/run.sh, the bench and
# hack scripts): a port to start one on, a wait for it, and where upstream's binaries are.

# free_port: prints a loopback port nothing listens on, for a server a script is about to start.
#
# The port is drawn below the kernel's ephemeral range: a port the kernel hands out for port 0
# is also what it gives the next outgoing connection as its source port, so with suites running
# side by side a client could take it between the pick and the server's bind ("address already
# in use"). Below the range, only another pick can collide, and a bind check rules out a
# listener already there.
free_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", random.randint(10000, low - 1) if low > 11000 else 0))
        except OSError:
            continue
        print(s.getsockname()[1])
        break
'
}

# wait_until SECONDS CMD...: runs CMD until it succeeds or the deadline passes.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}

# upstream_bin: prints the folder of upstream's binaries: KAPI_UPSTREAM_BIN, else what
# ../shared/upstream unpacks (nothing if neither is there).
upstream_bin() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [ -n "${KAPI_UPSTREAM_BIN:-}" ]; then
    echo "$KAPI_UPSTREAM_BIN"
  elif [ -x "$root/../shared/upstream/unpack.sh" ]; then
    "$root/../shared/upstream/unpack.sh"
  fi
}
