#!/usr/bin/env python3
"""SIGKILL or SIGSTOP one rank of a data-parallel amp-run job mid-run.

usage: dp_kill_rank.py AMP_RUN MODEL RANK KILL|STOP LIMIT [FLAGS...]

Starts `mpirun -np 2 amp-run MODEL --data-parallel FLAGS` on a long run,
waits until its step loop is running (rank 0's third progress line), sends
SIGKILL or SIGSTOP to the process of rank RANK (found by
OMPI_COMM_WORLD_RANK in its environment), and measures how long mpirun
takes to end the job. Prints the exit status, whether it ended within LIMIT
seconds of the signal, and the job's error lines (stderr: the tool's and
the runtime's).
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_ranks import rank_pid  # noqa: E402


def main():
    amp_run, model, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
    how, limit, flags = sys.argv[4], float(sys.argv[5]), sys.argv[6:]
    job = subprocess.Popen(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         amp_run, model, "--dataset=synthetic", "--data-parallel",
         "--threads=1", "--steps=1000000", "--log-every=1"] + flags,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in job.stdout:
        if line.startswith("step 2 "):
            break
    else:
        sys.exit("the job ended before its third step")
    pid = rank_pid(rank, job.pid)
    if pid is None:
        job.kill()
        sys.exit(f"no amp-run process of rank {rank}")
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL if how == "KILL" else signal.SIGSTOP)
    try:
        job.stdout.read()
        stderr = job.stderr.read()
        status = job.wait(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        os.kill(pid, signal.SIGKILL)
        sys.exit("the job was still running 120 s after the signal")
    seconds = time.monotonic() - killed
    print(f"exit status {status}, ended within {limit:g} s: {seconds < limit}")
    for line in stderr.splitlines():
        if "error:" in line or line.startswith("amp runtime:"):
            print(line)


if __name__ == "__main__":
    main()
