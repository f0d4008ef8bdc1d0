"""The processes of an mpirun job, found by their MPI rank."""
import os


def _parent(pid):
    """The parent pid of `pid`, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses.
    return int(stat[stat.rindex(b")") + 2:].split()[1])


def _descends_from(pid, root):
    while pid and pid != 1:
        if pid == root:
            return True
        pid = _parent(pid)
    return False


def rank_pid(rank, root, program=b"amp-run"):
    """The pid of the `program` process whose OMPI_COMM_WORLD_RANK is `rank`
    among the descendants of `root` (the job's mpirun: the tests run in
    parallel, each with jobs of its own), or None."""
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
        if (program in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env
                and _descends_from(int(pid), root)):
            return int(pid)
    return None
