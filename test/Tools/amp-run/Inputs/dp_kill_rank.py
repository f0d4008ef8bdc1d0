#!/usr/bin/env python3
"""SIGKILL one rank of a data-parallel amp-run job mid-run.

usage: dp_kill_rank.py AMP_RUN MODEL RANK

Starts `mpirun -np 2 amp-run MODEL --data-parallel` on a long run, waits
until its step loop is running (rank 0's first progress line), SIGKILLs the
process of rank RANK (found by OMPI_COMM_WORLD_RANK in its environment), and
measures how long mpirun takes to end the job. Prints the exit status and
whether it ended within 10 s of the kill.
"""
import os
import signal
import subprocess
import sys
import time


def rank_pid(parent, rank):
    """The amp-run process under `parent` whose MPI rank is `rank`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"amp-run" in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


def main():
    amp_run, model, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
    job = subprocess.Popen(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         amp_run, model, "--dataset=synthetic", "--data-parallel",
         "--threads=1", "--steps=1000000", "--log-every=1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in job.stdout:
        if line.startswith("step 2 "):
            break
    else:
        sys.exit("the job ended before its third step")
    pid = rank_pid(job.pid, rank)
    if pid is None:
        job.kill()
        sys.exit(f"no amp-run process of rank {rank}")
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    try:
        job.stdout.read()
        status = job.wait(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        sys.exit("the job was still running 60 s after the kill")
    seconds = time.monotonic() - killed
    print(f"exit status {status}, ended within 10 s: {seconds < 10}")


if __name__ == "__main__":
    main()
