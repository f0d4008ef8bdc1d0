"""The processes of an mpirun job, found by their MPI rank."""
import os


def rank_pid(rank, program=b"amp-run"):
    """The pid of the `program` process whose OMPI_COMM_WORLD_RANK is `rank`,
    or None."""
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
        if program in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None
