"""The reference of `cargo bench -p mesh-provide --bench kit_python`: the Python hook's own work, without mesh-provide.

One Python process imports the verbs of examples/hooks/redis-acl.py (the
same code the hook runs in serve mode: its pool of administrator
connections, its check's own connection as the consumer) and, for each line
`N C` on stdin, runs what a loop pass asks of the hook for N consumers,
`ensure` then `check` each, C threads at once; it answers one line,
`{"ms": ..., "failed": ...}`: the milliseconds that took, timed inside this
process.

Consumers and secrets are the benchmark's (it asks the same of
mesh-provide): consumer-0000, ... with bench-secret-0000-7f3a9c1e5d, ...
Settings as the hook's (REDIS_ACL_HOST, REDIS_ACL_PORT,
REDIS_ACL_ADMIN_USER, REDIS_ACL_ADMIN_PASSWORD_FILE).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.realpath(__file__))
# MESH_BENCH_HOOK: another copy of the hook, the one the bench serves too.
HOOK = os.environ.get("MESH_BENCH_HOOK") or os.path.join(HERE, "..", "..", "examples", "hooks", "redis-acl.py")

spec = importlib.util.spec_from_file_location("redis_acl", HOOK)
assert spec is not None and spec.loader is not None
redis_acl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(redis_acl)
mesh_hook = redis_acl.mesh_hook

hook = redis_acl.RedisAcl(dict(os.environ), pooled=True)


def one_pass(n: int, concurrency: int) -> dict:
    """ensure then check for n consumers, `concurrency` threads at once."""
    next_index = [0]
    failed = [0]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next_index[0]
                if i >= n:
                    return
                next_index[0] += 1
            consumer = mesh_hook.Consumer(name=f"consumer-{i:04d}", machine="app-1", provision="redis-acl", options={},
                                          provider=os.environ.get("MESH_PROVIDER") or "bench@bench-1")
            secret = f"bench-secret-{i:04d}-7f3a9c1e5d"
            try:
                hook.ensure(consumer, secret, mesh_hook.Deadline(30_000))
                hook.check(consumer, secret, mesh_hook.Deadline(30_000))
            except Exception as error:  # counted and said, the pass goes on
                with lock:
                    failed[0] += 1
                print(f"kit_python_direct: {consumer.name}: {error}", file=sys.stderr)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(min(concurrency, n))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"ms": (time.perf_counter() - started) * 1000.0, "failed": failed[0]}


for line in sys.stdin:
    words = line.split()
    if len(words) != 2:
        continue
    n, concurrency = int(words[0]), int(words[1])
    if n > 0 and concurrency > 0:
        sys.stdout.write(json.dumps(one_pass(n, concurrency)) + "\n")
        sys.stdout.flush()
hook.close()
