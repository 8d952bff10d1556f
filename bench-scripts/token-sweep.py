#!/usr/bin/env python3
"""token-sweep.py: what a sweep of a full RM delegation-token ledger costs the
request that runs it. A token-mode `weft serve` (simulated node, loopback,
a temp data dir) gets 100 users x 1,000 tokens (MAX_STANDING) over REST,
four clients at once; then, five times a little over a second apart (a full
ledger is swept at most once a second), one more user asks: that request
sweeps the ledger and is refused (503), as are the twenty asked right after
it, which do not sweep. Prints each sweeping request's time and the medians.

  python3 bench-scripts/token-sweep.py [WEFT]   (default target/release/weft)

The server it starts is stopped by its pid and its temp dir removed.
"""
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

WEFT = sys.argv[1] if len(sys.argv) > 1 else "target/release/weft"
USERS = [f"u{n}" for n in range(100)]
PER_USER = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    root = tempfile.mkdtemp(prefix="weft-token-sweep-")
    data = os.path.join(root, "data")
    os.makedirs(data, mode=0o700)
    tokens_file = os.path.join(data, "tokens.toml")
    bearer = {}
    for user in USERS + ["late"]:
        out = subprocess.run([WEFT, "token", "create", "--tokens-file", tokens_file, user],
                             capture_output=True, text=True, check=True).stdout
        bearer[user] = next(w for w in out.split() if w.startswith("weft_"))
    port = free_port()
    server = subprocess.Popen(
        [WEFT, "serve", "--data-dir", data, "--listen", f"127.0.0.1:{port}",
         "--sim-nodes", "1x1024mb,1vcores", "--set", "weft.security.authentication=token"],
        stdout=open(os.path.join(root, "server.log"), "w"), stderr=subprocess.STDOUT)
    try:
        def ask(user, conn):
            started = time.perf_counter()
            conn.request("POST", "/ws/v1/cluster/delegation-token", body=json.dumps({"renewer": ""}),
                         headers={"Authorization": f"Bearer {bearer[user]}",
                                  "Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            return response.status, (time.perf_counter() - started) * 1000

        for _ in range(300):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/ws/v1/cluster/info",
                             headers={"Authorization": f"Bearer {bearer['late']}"})
                conn.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)

        def fill(users):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for user in users:
                for _ in range(PER_USER):
                    status, _ = ask(user, conn)
                    assert status == 200, status

        started = time.time()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(fill, [USERS[i::4] for i in range(4)]))
        print(f"filled {len(USERS) * PER_USER:,} tokens in {time.time() - started:.1f} s")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        sweeping, others = [], []
        for _ in range(5):
            time.sleep(1.1)
            status, ms = ask("late", conn)
            assert status == 503, status
            sweeping.append(ms)
            for _ in range(20):
                status, ms = ask("late", conn)
                assert status == 503, status
                others.append(ms)
        print("sweeping requests (ms):", [round(ms, 2) for ms in sweeping],
              "median", round(statistics.median(sweeping), 2))
        print("the 503s between (ms): median", round(statistics.median(others), 2),
              "max", round(max(others), 2))
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(root)


main()
