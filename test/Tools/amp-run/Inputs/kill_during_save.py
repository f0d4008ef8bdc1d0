#!/usr/bin/env python3
"""SIGKILL amp-run while it saves a checkpoint, over and over.

usage: kill_during_save.py AMP_RUN MODEL TMP_DIR TRIALS [RANKS]

A reference run trains 8 steps uninterrupted. A checkpoint A is taken at
step 4. Each trial resumes from A (--load=ck --save=ck, so the save replaces
the file it loaded), waits until the save has started (ck.tmp exists; the
AMP_TEST_SLOW_WRITE_MS hook writes in 64 KiB pieces 10 ms apart), and
kills the process at a random moment of the write. Afterwards ck must be
either A, byte for byte (and resuming from A must end byte-identical to the
reference), or (when the kill came after the rename) the finished step-8
checkpoint, identical to the reference. Prints the count of kills that
landed mid-write and of bad trials.

With RANKS > 1 every run is `mpirun -np RANKS amp-run ... --data-parallel
--threads=1`, and the kill goes to rank 0 (the rank that writes); mpirun
then ends the others.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_ranks import rank_pid  # noqa: E402


def main():
    amp_run, model, tmp, trials = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ranks = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    os.makedirs(tmp, exist_ok=True)
    base = [amp_run, model, "--dataset=synthetic", "--steps=8", "--log-every=0"]
    if ranks > 1:
        base = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                str(ranks)] + base + ["--data-parallel", "--threads=1"]
    ref, a, ck = (os.path.join(tmp, n) for n in ("ref.st", "a.st", "ck.st"))
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(base + ["--save=" + ref], check=True, **quiet)
    subprocess.run(base + ["--stop-at=4", "--save=" + a], check=True, **quiet)
    reference, original = open(ref, "rb").read(), open(a, "rb").read()
    rng = random.Random(7)
    env = dict(os.environ, AMP_TEST_SLOW_WRITE_MS="10")
    mid_write = bad = 0
    for trial in range(trials):
        shutil.copyfile(a, ck)
        if os.path.exists(ck + ".tmp"):
            os.remove(ck + ".tmp")
        p = subprocess.Popen(base + ["--load=" + ck, "--save=" + ck], env=env, **quiet)
        deadline = time.time() + 120
        while not os.path.exists(ck + ".tmp") and p.poll() is None and time.time() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.5))
        if ranks > 1:
            writer = rank_pid(0, p.pid)
            killed = writer is not None
            if killed:
                os.kill(writer, signal.SIGKILL)
            p.wait()
        else:
            p.send_signal(signal.SIGKILL)
            p.wait()
            killed = p.returncode == -signal.SIGKILL
        after = open(ck, "rb").read()
        if after == original:
            mid_write += killed
        elif after != reference:
            bad += 1
            print(f"BAD trial {trial}: the checkpoint is neither the old nor the finished one")
    # Every surviving checkpoint is A byte for byte, so one resume from A
    # stands for all of them.
    out = os.path.join(tmp, "resumed.st")
    subprocess.run(base + ["--load=" + a, "--save=" + out], check=True, **quiet)
    if open(out, "rb").read() != reference:
        bad += 1
        print("BAD: resuming from the kept checkpoint differs from the reference")
    print(f"{trials} trials, {mid_write} killed during the save, {bad} bad")


if __name__ == "__main__":
    main()
