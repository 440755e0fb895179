"""`memsched serve` keeps a CPU for the batched embedding dispatcher and its other threads off it
(`memsched.affinity`). Each case runs in a process of its own, started on CPUs {0, 1}, so the test
run's own threads are never moved; a machine with one CPU cannot show it (skipped there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from memsched.testing import FakeOpenAI
from memsched.testing.live_server import free_port, wait_serving

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or not {0, 1} <= os.sched_getaffinity(0),
    reason="needs Linux and CPUs 0 and 1 (affinity is per CPU)",
)

IN_PROCESS = """
import json, os, sys, threading
import numpy as np
from memsched import affinity
from memsched.embed.batch import MicroBatcher

os.sched_setaffinity(0, set(json.loads(sys.argv[1])))

class Model:
    model_id, dim, batch_size, micro_batch = "m", 2, 8, True
    def embed(self, texts):
        return np.zeros((len(texts), 2), dtype=np.float32)

def cpus(tid):
    return sorted(os.sched_getaffinity(tid))

early = MicroBatcher(Model())
early.embed(["before"])  # its dispatcher is running when the core is reserved
core = affinity.reserve()
late = MicroBatcher(Model())
late.embed(["after"])
started = threading.Event()
stop = threading.Event()
other = threading.Thread(target=lambda: (started.set(), stop.wait()))
other.start()
started.wait()
print(json.dumps({
    "core": core,
    "early": cpus(early._threads[0].native_id),
    "late": cpus(late._threads[0].native_id),
    "main": cpus(0),
    "other": cpus(other.native_id),
}))
stop.set()
"""


def _in_process(cpus: list[int]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, json.dumps(cpus)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_the_dispatchers_get_the_highest_cpu_and_every_other_thread_the_rest() -> None:
    got = _in_process([0, 1])
    # a dispatcher started before the reservation is moved, one started after joins it; the main
    # thread and the threads it starts later stay off it
    assert got == {"core": 1, "early": [1], "late": [1], "main": [0], "other": [0]}


def test_with_one_cpu_allowed_nothing_is_reserved_or_moved() -> None:
    got = _in_process([0])
    assert got == {"core": None, "early": [0], "late": [0], "main": [0], "other": [0]}


def _task_cpus(pid: int) -> list[list[int]]:
    """Each thread's allowed CPUs, from /proc (Cpus_allowed_list: "0", "0-1", "0,2")."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue  # ended meanwhile
        spec = next(
            line.split(":", 1)[1].strip()
            for line in status.splitlines()
            if line.startswith("Cpus_allowed_list")
        )
        cpus: list[int] = []
        for part in spec.split(","):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        out.append(cpus)
    return out


@pytest.mark.parametrize("setting", [None, "false"])
def test_serve_runs_the_embedding_dispatcher_alone_on_a_cpu(tmp_path: Path, setting: str | None) -> None:
    """A real `memsched serve` with a batched embedder (the `openai` one, against the fake server):
    after a turn, its dispatcher thread alone is on CPU 1 and every other thread on CPU 0; with
    MEMSCHED_EMBED_CORE=false every thread keeps both."""
    port = free_port()
    with FakeOpenAI() as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSCHED_")}
        env.update(
            MEMSCHED_HOME=str(tmp_path / "home"),
            MEMSCHED_PORT=str(port),
            MEMSCHED_EMBEDDERS="openai",
            MEMSCHED_EMBED_BASE_URL=fake.base_url,
            MEMSCHED_EMBED_MODEL="fake-embed",
        )
        if setting is not None:
            env["MEMSCHED_EMBED_CORE"] = setting
        proc = subprocess.Popen(
            [sys.executable, "-c", "from memsched.cli import main; main()", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: os.sched_setaffinity(0, {0, 1}),
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_serving(proc, base)
            r = httpx.post(
                f"{base}/v1/context",
                json={"user": "u", "session_id": "s", "message": "what did I say about the garden?"},
                timeout=30,
            )
            assert r.status_code == 200, r.text
            assert any(req.path.endswith("/embeddings") for req in fake.requests)
            cpus = _task_cpus(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    if setting == "false":
        assert all(c == [0, 1] for c in cpus), cpus
    else:
        assert 1 <= sum(c == [1] for c in cpus) <= 2, cpus  # the dispatcher (and the side one, if made)
        assert all(c in ([0], [1]) for c in cpus), cpus
        assert sum(c == [0] for c in cpus) > 2, cpus  # the event loop, the turn threads, the workers
