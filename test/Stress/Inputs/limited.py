"""limited.py MIB COMMAND...: runs COMMAND with its address space limited to
MIB mebibytes (RLIMIT_AS) and exits with its status (1 if it was killed)."""
import resource
import subprocess
import sys

limit = int(sys.argv[1]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
status = subprocess.call(sys.argv[2:])
sys.exit(status if status >= 0 else 1)
