"""The compile cache through amp.compile (docs/UserGuide.md, "The compile
cache"): a second compile of the same model and options is a hit whose
first steps equal the uncached step's bit for bit; the user's model file
edited above the model (every source line moves) still hits; another option
misses; ``cache=False`` and ``AMP_CACHE=0`` neither read nor write it;
``python -m amp.cache`` lists and clears it. Each test has its own cache
directory."""

import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import amp


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x):
        return self.net(x)


SOURCE = """import torch.nn as nn


class Edited(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x):
        return self.net(x)
"""


def edited_model(directory, comment: str) -> nn.Module:
    """The user's model file (``edited_model_file.py``) with ``comment``
    lines added above the model: every source line of the imported module
    moves."""
    import importlib.util
    path = directory / "edited_model_file.py"
    path.write_text(comment + SOURCE)
    spec = importlib.util.spec_from_file_location("edited_model_file", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Edited()


def batches(count: int):
    g = torch.Generator().manual_seed(2)
    return [(torch.randn(8, 1, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g))
            for _ in range(count)]


def compiled(model, **options):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], optimizer=opt,
                       opt_level="O1", dtype=torch.bfloat16, **options)


def entries(directory) -> int:
    return len([n for n in os.listdir(directory) if n.endswith(".so")])


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AMP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AMP_CACHE", raising=False)
    return tmp_path / "cache"


def test_a_second_compile_is_a_hit_with_the_same_losses(cache_dir):
    torch.manual_seed(0)
    model = Small()
    again = copy.deepcopy(model)
    first = compiled(model)
    assert not first.cache_hit and entries(cache_dir) == 1
    second = compiled(again)
    assert second.cache_hit and entries(cache_dir) == 1
    for batch in batches(3):
        assert first(*batch).loss == second(*batch).loss  # bit for bit
    # the user's file edited above the model: the same code at other lines
    before = edited_model(cache_dir.parent, "")
    step = compiled(before)
    assert not step.cache_hit
    after = edited_model(cache_dir.parent, "# a comment\n# and another\n\n")
    assert compiled(after).cache_hit
    assert step.mlir != compiled(after).mlir  # the locations differ
    # another option: compiled, and kept beside
    assert not compiled(Small(), accumulate=2).cache_hit
    assert entries(cache_dir) == 3


def test_the_bypasses_neither_read_nor_write(cache_dir, monkeypatch):
    torch.manual_seed(0)
    assert not compiled(Small(), cache=False).cache_hit
    assert not cache_dir.exists() or entries(cache_dir) == 0
    compiled(Small())
    assert entries(cache_dir) == 1
    assert not compiled(Small(), cache=False).cache_hit
    monkeypatch.setenv("AMP_CACHE", "0")
    assert not compiled(Small()).cache_hit


def test_an_unusable_directory_warns_and_compiles(tmp_path, monkeypatch):
    (tmp_path / "plain").write_text("a file, not a directory")
    monkeypatch.setenv("AMP_CACHE_DIR", str(tmp_path / "plain" / "cache"))
    with pytest.warns(RuntimeWarning, match="cannot be created .*compiling without it"):
        step = compiled(Small())
    assert not step.cache_hit
    step(*batches(1)[0])


def test_python_m_amp_cache_lists_and_clears(cache_dir):
    compiled(Small())
    environment = dict(os.environ)
    run = subprocess.run([sys.executable, "-m", "amp.cache", "list"], capture_output=True,
                         text=True, env=environment)
    assert run.returncode == 0, run.stderr
    assert f"compile cache {cache_dir}: 1 step" in run.stdout
    assert "opt-level=O1" in run.stdout and "dtype=bf16" in run.stdout
    run = subprocess.run([sys.executable, "-m", "amp.cache", "clear"], capture_output=True,
                         text=True, env=environment)
    assert run.returncode == 0 and "removed 1 cached step" in run.stdout
    assert entries(cache_dir) == 0
    run = subprocess.run([sys.executable, "-m", "amp.cache", "purge"], capture_output=True,
                         text=True, env=environment)
    assert run.returncode == 2 and "usage: python -m amp.cache [list|clear]" in run.stderr


def test_progress_on_a_terminal_only(cache_dir, tmp_path):
    """A compile's phases are shown as they end when stderr is a terminal
    (a pseudo-terminal here), and not otherwise."""
    import pty
    script = tmp_path / "compile.py"
    script.write_text(
        "import sys, torch, torch.nn as nn, amp\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from test_cache import Small, compiled\n"
        "torch.manual_seed(0)\n"
        "compiled(Small(), cache=False)\n")
    main, secondary = pty.openpty()
    run = subprocess.run([sys.executable, str(script)], stderr=secondary,
                         stdout=subprocess.PIPE, env=dict(os.environ))
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert run.returncode == 0, shown.decode(errors="replace")
    text = shown.decode(errors="replace")
    for phase in ("amp.compile: amp-pipeline: ", "amp.compile: lowering: ",
                  "amp.compile: LLVM optimization and machine code: ", "amp.compile: total: "):
        assert phase in text, text
    quiet = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert quiet.returncode == 0 and "amp.compile:" not in quiet.stderr, quiet.stderr
