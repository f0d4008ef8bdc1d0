"""Feeds amp-opt every prefix of a file at a fixed stride and checks that each
run either succeeds or fails cleanly: exit status 0 or 1 (never a signal or an
abort), and a failure always prints an 'error:' diagnostic with a location."""

import re
import subprocess
import sys
import tempfile

amp_opt, path, stride = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(path, "rb").read()
failures = 0
runs = 0
with tempfile.NamedTemporaryFile(suffix=".mlir") as tmp:
    for end in range(0, len(data), stride):
        tmp.seek(0)
        tmp.truncate()
        tmp.write(data[:end])
        tmp.flush()
        proc = subprocess.run([amp_opt, tmp.name], capture_output=True)
        runs += 1
        err = proc.stderr.decode(errors="replace")
        if proc.returncode not in (0, 1):
            print(f"prefix {end}: exit status {proc.returncode}\n{err}")
            failures += 1
        elif proc.returncode == 1 and not re.search(r":\d+:\d+: error: ", err):
            print(f"prefix {end}: failed without a located diagnostic:\n{err}")
            failures += 1
print(f"{runs} prefixes, {failures} bad")
sys.exit(1 if failures else 0)
