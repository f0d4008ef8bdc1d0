"""The exceptions amp raises."""

from __future__ import annotations

import dataclasses
from typing import List


@dataclasses.dataclass
class UnsupportedNode:
    """One node of a model that amp cannot import, and why."""

    module: str  # the module path ("layer3.0.conv1"; "" at the top level)
    module_type: str  # "torch.nn.modules.rnn.LSTM", or "" for functions
    op: str  # the ATen op ("aten.lstm.input")
    line: int  # the user's source line (0 when unknown)
    reason: str
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "<unknown>"
        module = self.module or "<top>"
        kind = f" ({self.module_type})" if self.module_type else ""
        return f"{where}: {module}{kind}: {self.op}: {self.reason}"


class UnsupportedModelError(Exception):
    """The model has nodes amp cannot import; ``nodes`` lists every one."""

    def __init__(self, nodes: List[UnsupportedNode]):
        self.nodes = nodes
        lines = "\n".join(f"  {n}" for n in nodes)
        super().__init__(f"{len(nodes)} node(s) of the model cannot be imported:\n{lines}")


class DeviceUnavailableError(RuntimeError):
    """The step compiled for ``backend="cuda"`` cannot run here: no CUDA
    device or driver. The message is the runtime's reason."""


class CompileError(Exception):
    """amp-compile rejected the imported step; the message is its diagnostics."""
