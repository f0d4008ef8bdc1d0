"""The compile cache from Python: ``python -m amp.cache list`` shows the
compiled steps kept in ``$AMP_CACHE_DIR`` (default ``~/.cache/amp/steps``),
``python -m amp.cache clear`` removes them. The cache itself lives in
amp-compile (lib/Execution/ArtifactCache.cpp); docs/UserGuide.md, "The
compile cache"."""

from __future__ import annotations

import subprocess
import sys
from typing import List, Optional

from ._api import _amp_compile

__all__ = ["list_entries", "clear", "main"]


def _run(flag: str) -> str:
    run = subprocess.run([_amp_compile(), flag], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip() or f"amp-compile {flag} exited {run.returncode}")
    return run.stdout


def list_entries() -> str:
    """The cache's directory, size and entries (most recently used first),
    as amp-compile --cache-list prints them."""
    return _run("--cache-list")


def clear() -> str:
    """Removes every cached step; what amp-compile --cache-clear says."""
    return _run("--cache-clear")


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m amp.cache [list|clear]`` (list by default)."""
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else "list"
    if command not in ("list", "clear") or len(args) > 1:
        print("usage: python -m amp.cache [list|clear]", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(list_entries() if command == "list" else clear())
    except RuntimeError as error:
        print(f"amp.cache: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
