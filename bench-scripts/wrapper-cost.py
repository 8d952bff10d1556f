#!/usr/bin/env python3
"""wrapper-cost.py: the CPU a container's own processes cost on this machine,
with and without the agent's /bin/sh wrapper (host/src/agent/executor.rs
WRAPPER: `sh -c WRAPPER weft-container EXIT_DIR CMD…`, which runs the command
in a subshell `( "$@" )` and then `command -p mv` for the exit-code file).

  python3 bench-scripts/wrapper-cost.py [N]     (default 1000 runs each)

Runs each variant N times, one after another, and prints wall time and the
children's CPU (user+sys, from os.times) per run. No cgroups, no agent.
"""
import os
import subprocess
import sys
import tempfile
import time

WRAPPER = r'''exit_dir=$1
shift
( "$@" )
status=$?
printf '%s\n' "$status" > "$exit_dir/exitcode.tmp" && command -p mv -f "$exit_dir/exitcode.tmp" "$exit_dir/exitcode"
exit "$status"'''

# The same wrapper without the subshell and without mv (not atomic: for
# comparison only).
LEAN = r'''exit_dir=$1
shift
"$@"
status=$?
printf '%s\n' "$status" > "$exit_dir/exitcode"
exit "$status"'''


def measure(argv, n):
    t0, r0 = time.perf_counter(), os.times()
    for _ in range(n):
        subprocess.run(argv, check=True)
    t1, r1 = time.perf_counter(), os.times()
    cpu = (r1.children_user + r1.children_system) - (r0.children_user + r0.children_system)
    return (t1 - t0) / n * 1000, cpu / n * 1000


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory(prefix="weft-wrapper-cost-") as d:
        for name, argv in [
            ("/bin/true, exec'd directly", ["/bin/true"]),
            ("agent's sh wrapper + /bin/true", ["/bin/sh", "-c", WRAPPER, "weft-container", d, "/bin/true"]),
            ("lean sh wrapper + /bin/true", ["/bin/sh", "-c", LEAN, "weft-container", d, "/bin/true"]),
        ]:
            wall, cpu = measure(argv, n)
            print(f"{name:34s} wall {wall:5.2f} ms/run  children CPU {cpu:5.2f} ms/run  (n={n})")


if __name__ == "__main__":
    main()
