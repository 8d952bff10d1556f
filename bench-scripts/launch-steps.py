#!/usr/bin/env python3
"""launch-steps.py: what one container launch costs on this machine, step by
step, by doing what the Weft agent's executor does per container
(host/src/agent/executor.rs `start`, cgroups.rs `create`) from a Python
loop, sequentially, N times, and timing each step. It does not run Weft; it
is a model of the agent's per-container work, to see where the agent's
launch time goes without perf or strace. Python adds a few µs per step
(more for subprocess: ~0.1-0.2 ms), so read the steps relative to each other.

  python3 bench-scripts/launch-steps.py [--n 1000] [--no-cgroup] [--direct] [--vfork]

  --no-cgroup  skip the per-container v1 memory+cpu cgroups
  --direct     exec /bin/true itself instead of the /bin/sh wrapper
               (`sh -c WRAPPER` forks a subshell for the command and runs
               `mv` for the exit-code file: 3 processes per container)
  --vfork      spawn without a pre-exec hook (Python then uses vfork, as
               Rust's Command uses posix_spawn when no pre_exec is set);
               the cgroup is then joined by the parent after the spawn

Everything is made under a fresh temp dir and, for cgroups, under this
process's own v1 memory and cpu cgroups as <own>/weft-launch-steps-<pid>/<i>;
all of it is removed at the end.
"""
import argparse
import json
import os
import shutil
import statistics
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


def own_cgroup(controller):
    for line in open("/proc/self/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        if controller in ctrls.split(","):
            base = f"/sys/fs/cgroup/{ctrls}"
            if os.path.isdir(base):
                return base + path
    return None


def write_atomically(path, obj):
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, json.dumps(obj).encode())
    os.close(fd)
    os.rename(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--no-cgroup", action="store_true")
    ap.add_argument("--direct", action="store_true")
    ap.add_argument("--vfork", action="store_true")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="weft-launch-steps-")
    work, logs = f"{root}/work", f"{root}/logs"
    app = "application_1_0001"
    cg = None
    if not a.no_cgroup:
        mem, cpu = own_cgroup("memory"), own_cgroup("cpu")
        if not mem or not cpu:
            sys.exit("no v1 memory and cpu cgroups here; use --no-cgroup")
        cg = [f"{mem}/weft-launch-steps-{os.getpid()}", f"{cpu}/weft-launch-steps-{os.getpid()}"]
        for d in cg:
            os.mkdir(d)
    os.makedirs(f"{work}/.weft/containers")
    steps = {k: [] for k in ("dirs+order", "cgroup create", "spawn", "pid record")}
    procs = []
    t_start = time.perf_counter()
    for i in range(a.n):
        cid = f"container_1_0001_01_{i + 2:06d}"
        t = [time.perf_counter_ns()]
        priv = f"{work}/.weft/containers/{cid}"
        os.mkdir(priv, 0o711)
        order = {"container_id": cid, "app_id": app, "user": "root", "memory_mb": 64, "vcores": 1,
                 "command": {"argv": ["/bin/true"]}, "env": {}}
        write_atomically(f"{priv}/order.json", order)
        exit_dir, cwd, logd = f"{priv}/exit", f"{work}/apps/{app}/{cid}", f"{logs}/{app}/{cid}"
        os.mkdir(exit_dir, 0o700)
        os.makedirs(cwd, 0o750)
        os.makedirs(logd, 0o750)
        out = os.open(f"{logd}/stdout", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        err = os.open(f"{logd}/stderr", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        t.append(time.perf_counter_ns())
        joins = []
        if cg:
            m, c = f"{cg[0]}/{cid}", f"{cg[1]}/{cid}"
            os.mkdir(m)
            with open(f"{m}/memory.limit_in_bytes", "w") as f:
                f.write(str(64 << 20))
            if os.path.exists(f"{m}/memory.memsw.limit_in_bytes"):
                with open(f"{m}/memory.memsw.limit_in_bytes", "w") as f:
                    f.write(str(64 << 20))
            os.mkdir(c)
            with open(f"{c}/cpu.shares", "w") as f:
                f.write("1024")
            joins = [os.open(f"{d}/cgroup.procs", os.O_WRONLY) for d in (m, c)]
        t.append(time.perf_counter_ns())
        argv = ["/bin/true"] if a.direct else ["/bin/sh", "-c", WRAPPER, "weft-container", exit_dir, "/bin/true"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CONTAINER_ID": cid, "APP_ID": app}
        if a.vfork:
            p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env=env, start_new_session=True, close_fds=False)
            for fd in joins:
                try:
                    os.write(fd, str(p.pid).encode())
                except OSError:
                    pass  # already gone
        else:
            def pre(joins=joins):
                os.setsid()
                for fd in joins:
                    os.write(fd, b"0")
            p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env=env, preexec_fn=pre, pass_fds=joins)
        t.append(time.perf_counter_ns())
        for fd in joins + [out, err]:
            os.close(fd)
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                start_ticks = f.read().rsplit(")", 1)[1].split()[19]
        except OSError:
            start_ticks = 0
        write_atomically(f"{priv}/pid", {"pid": p.pid, "start_ticks": start_ticks})
        t.append(time.perf_counter_ns())
        for k, a0, a1 in zip(steps, t, t[1:]):
            steps[k].append((a1 - a0) / 1e6)
        procs.append((cid, p))
    t_launched = time.perf_counter()
    end_steps = {"reap": [], "cgroup remove": [], "end record + forget": []}
    for cid, p in procs:
        t0 = time.perf_counter_ns()
        p.wait()
        t1 = time.perf_counter_ns()
        if cg:
            for d in cg:
                for _ in range(100):
                    try:
                        os.rmdir(f"{d}/{cid}")
                        break
                    except OSError:
                        time.sleep(0.001)
        t2 = time.perf_counter_ns()
        priv = f"{work}/.weft/containers/{cid}"
        write_atomically(f"{priv}/end.json", {"container_id": cid, "exit_status": p.returncode})
        shutil.rmtree(priv)
        t3 = time.perf_counter_ns()
        end_steps["reap"].append((t1 - t0) / 1e6)
        end_steps["cgroup remove"].append((t2 - t1) / 1e6)
        end_steps["end record + forget"].append((t3 - t2) / 1e6)
    t_end = time.perf_counter()
    ru = os.times()
    variant = ("no-cgroup" if a.no_cgroup else "cgroup-v1") + ("+direct" if a.direct else "+sh-wrapper") + \
        ("+vfork" if a.vfork else "+fork-preexec")
    print(f"[{variant}] n={a.n} launch phase {t_launched - t_start:.3f} s = {a.n / (t_launched - t_start):.0f}/s; "
          f"end phase {t_end - t_launched:.3f} s; total {a.n / (t_end - t_start):.0f}/s; "
          f"this process {ru.user + ru.system:.2f} s CPU, children {ru.children_user + ru.children_system:.2f} s CPU "
          f"({(ru.children_user + ru.children_system) / a.n * 1000:.2f} ms per container)")
    for k, v in list(steps.items()) + list(end_steps.items()):
        if a.no_cgroup and k.startswith("cgroup"):
            continue
        v = sorted(v)
        print(f"  {k:22s} mean {statistics.mean(v):6.3f} ms  p50 {v[len(v) // 2]:6.3f}  p90 {v[9 * len(v) // 10]:6.3f}")
    if cg:
        for d in cg:
            os.rmdir(d)
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
