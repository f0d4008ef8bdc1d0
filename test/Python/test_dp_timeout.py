"""Data-parallel steps from Python when a rank fails: one that stops
answering (the waiting rank's collective gives up at ``dp_timeout`` and
ends the job, naming the step's call and the silent rank: the heartbeats of
docs/Distributed.md), and one that raises an exception nobody catches (it
ends every rank at once, where the others would wait for it for ever).
Each test launches its own ``mpirun -np 2`` of a small script.
"""

import os
import subprocess
import sys
import textwrap
import time

SETUP = """
import os, signal, time
import torch, torch.nn as nn
import amp
from models import mlp
amp.set_num_threads(1)
torch.manual_seed(0)
model = mlp()
x, y = torch.randn(16, 784), torch.randint(0, 10, (16,))
step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                   optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                   opt_level="O0", data_parallel=True, dp_timeout=TIMEOUT)
step(x, y)
"""


def _job(tmp_path, script: str) -> subprocess.CompletedProcess:
    """Runs `script` as a job of two ranks; fails if it is not over in 60 s."""
    path = tmp_path / "job.py"
    path.write_text(script)
    start = time.monotonic()
    run = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          sys.executable, str(path)],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", "") +
                                  os.pathsep + os.path.dirname(os.path.abspath(__file__))))
    assert time.monotonic() - start < 60
    return run


def test_a_stopped_rank_ends_the_job_naming_it(tmp_path):
    run = _job(tmp_path, SETUP.replace("TIMEOUT", "2") + textwrap.dedent("""
        if amp.get_rank() == 1:
            os.kill(os.getpid(), signal.SIGSTOP)  # hung: never calls again
        step(x, y)
        print("rank", amp.get_rank(), "was not stopped", flush=True)
    """))
    assert run.returncode != 0
    assert "was not stopped" not in run.stdout
    assert ("amp runtime: rank 0 of 2: all-reduce of " in run.stderr and
            "a call of the step (dp_timeout=2) did not complete in time: MPI_Iallreduce" in run.stderr and
            "is waiting for rank 1 (silent for " in run.stderr), run.stderr


def test_an_uncaught_exception_ends_every_rank(tmp_path):
    # No deadline: without the abort, rank 0 would wait for ever.
    run = _job(tmp_path, SETUP.replace("TIMEOUT", "0") + textwrap.dedent("""
        if amp.get_rank() == 1:
            raise ValueError("rank 1 fails")
        step(x, y)
        print("rank 0 went on", flush=True)
    """))
    assert run.returncode != 0
    assert "ValueError: rank 1 fails" in run.stderr, run.stderr
    assert "rank 0 went on" not in run.stdout
