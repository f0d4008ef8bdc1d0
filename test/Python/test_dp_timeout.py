"""A data-parallel step from Python whose other rank stops answering: the
waiting rank's collective gives up at ``dp_timeout`` and ends the job,
naming the step's call and the silent rank (the heartbeats of
docs/Distributed.md). Launches its own ``mpirun -np 2`` of a small script.
"""

import os
import subprocess
import sys
import textwrap
import time

SCRIPT = textwrap.dedent("""
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
                       opt_level="O0", data_parallel=True, dp_timeout=2)
    step(x, y)
    if amp.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGSTOP)  # hung: never calls again
    step(x, y)
    print("rank", amp.get_rank(), "was not stopped", flush=True)
""")


def test_a_stopped_rank_ends_the_job_naming_it(tmp_path):
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT)
    start = time.monotonic()
    run = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          sys.executable, str(script)],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", "") +
                                  os.pathsep + os.path.dirname(os.path.abspath(__file__))))
    assert run.returncode != 0
    assert time.monotonic() - start < 60
    assert "was not stopped" not in run.stdout
    assert ("amp runtime: rank 0 of 2: all-reduce of " in run.stderr and
            "a call of the step (timeout=2) did not complete in time: MPI_Iallreduce" in run.stderr and
            "is waiting for rank 1 (silent for " in run.stderr), run.stderr
