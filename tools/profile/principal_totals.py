#!/usr/bin/env python3
"""What a principal's max_jobs costs (issue 29 item 5; docs/security.md).

Starts a redis-server and one `dueq serve` with an auth file of two producers,
`free` (no limits) and `capped` (max_namespaces, max_jobs), then:

1. Enqueues N jobs one at a time as each principal and prints the wall time per
   call and the Redis commands each run issued, by command (INFO commandstats):
   and the service's CPU time per call (/proc): `capped` should add only about one
   totals read a second (SMEMBERS, then HMGET and ZCARD per namespace; the HMGETs
   in the scripts are counted too), not a command per call.
2. Fills `capped`'s namespace set with NS more namespaces (at most 9,996) (one job each), then times
   the first Enqueue through a second, fresh service: that call waits for one
   read of the totals over all NS namespaces.

Usage: python3 tools/profile/principal_totals.py DUEQ_BINARY [N] [NS]
(DUEQ_BINARY: target/debug/dueq or target/release/dueq). Needs redis-server and
the `dueq` Python package (pip install ./clients/python).
"""

import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time

import grpc
import redis
from dueq.v1 import jobs_pb2, queue_pb2_grpc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port):
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def auth_file(directory, ns_count):
    def entry(name, limits):
        digest = hashlib.sha256(f"t-{name}".encode()).hexdigest()
        return (
            f'[[principal]]\nname = "{name}"\nroles = ["producer"]\nnamespaces = ["*"]\n'
            f'token_sha256 = "{digest}"\n{limits}\n\n'
        )

    path = os.path.join(directory, "auth.toml")
    with open(path, "w") as f:
        f.write(entry("free", ""))
        f.write(entry("capped", f"max_namespaces = 10000\nmax_jobs = 100000000"))
    return path


def serve(binary, redis_url, auth):
    port = free_port()
    child = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--redis-url", redis_url,
         "--auth-file", auth],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "DUEQ_LOG": "warn"},
    )
    wait_port(port)
    return child, queue_pb2_grpc.QueueServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))


def enqueue(stub, name, namespace):
    request = jobs_pb2.EnqueueRequest(namespace=namespace, queue="q", name="j")
    stub.Enqueue(request, metadata=[("authorization", f"Bearer t-{name}")])


def commandstats(r):
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in r.info("commandstats").items()}


def cpu_seconds(pid):
    """The user + system CPU time process `pid` has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(stub, r, pid, name, n):
    r.config_resetstat()
    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    for i in range(n):
        enqueue(stub, name, f"{name}-{i % 4}")
    took = time.perf_counter() - start
    cpu = cpu_seconds(pid) - cpu
    stats = commandstats(r)
    shown = {k: stats.get(k, 0) for k in ("smembers", "hmget", "zcard")}
    print(f"{name:7} {n} Enqueues in {took:.2f}s: {1e6 * took / n:.0f} us/call, "
          f"service CPU {1e6 * cpu / n:.0f} us/call; Redis commands {shown}")


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    ns_count = int(sys.argv[3]) if len(sys.argv) > 3 else 9990
    children = []
    with tempfile.TemporaryDirectory() as directory:
        redis_port = free_port()
        children.append(subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL))
        wait_port(redis_port)
        redis_url = f"redis://127.0.0.1:{redis_port}"
        r = redis.Redis(port=redis_port)
        try:
            auth = auth_file(directory, ns_count)
            child, stub = serve(binary, redis_url, auth)
            children.append(child)
            for name in ("free", "capped") * 3:
                run(stub, r, child.pid, name, n)
            for i in range(ns_count):
                enqueue(stub, "capped", f"fill-{i}")
            # Its background reads of the growing set would run into the measurement.
            child.terminate()
            child.wait()
            child, fresh = serve(binary, redis_url, auth)
            children.append(child)
            start = time.perf_counter()
            enqueue(fresh, "free", "fill-0")
            print(f"first free Enqueue on a fresh replica: {1e3 * (time.perf_counter() - start):.1f} ms")
            r.config_resetstat()
            start = time.perf_counter()
            enqueue(fresh, "capped", "fill-0")
            took = time.perf_counter() - start
            stats = commandstats(r)
            print(f"then its first capped Enqueue, {ns_count + 4} namespaces: "
                  f"{1e3 * took:.1f} ms; hmget {stats.get('hmget', 0)}, zcard {stats.get('zcard', 0)}")
        finally:
            for child in reversed(children):
                child.terminate()
                child.wait()


if __name__ == "__main__":
    main()
