"""The exceptions amp raises."""

from __future__ import annotations

import dataclasses
import json
from typing import List, Optional


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


@dataclasses.dataclass
class Diagnostic:
    """One diagnostic of amp's compiler, mapped back to the imported node: the
    module path and the user's source line the importer gave the op (for a
    backward op, its forward op's, with ``backward`` set)."""

    severity: str  # "error", "warning", "remark" or "note"
    message: str
    op: str = ""  # the op it is about, where the message names one ("train.matmul")
    module: str = ""  # the module path ("encoder.layers.0.fc1"; "" at the top or unknown)
    file: str = ""  # the user's source file ("" when the location has none)
    line: int = 0
    column: int = 0
    backward: bool = False
    notes: List["Diagnostic"] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file else ""
        module = f"{self.module}: " if self.module else ""
        backward = "(backward) " if self.backward else ""
        return f"{where}{module}{backward}{self.severity}: {self.message}"

    @classmethod
    def _from_record(cls, record: dict, imported: str = "") -> "Diagnostic":
        """A record of amp-compile's --diagnostics-file; locations in the
        imported module's own text (``imported``) are not the user's."""
        file = record.get("file", "")
        user = bool(file) and file != imported
        return cls(severity=record["severity"], message=record["message"],
                   op=record.get("op", ""), module=record.get("module", ""),
                   file=file if user else "", line=record.get("line", 0) if user else 0,
                   column=record.get("column", 0) if user else 0,
                   backward=bool(record.get("backward", False)),
                   notes=[cls._from_record(n, imported) for n in record.get("notes", [])])


def _read_diagnostics(path: str, imported: str = "") -> List[Diagnostic]:
    """The records amp-compile wrote to ``path`` (--diagnostics-file); none
    when it wrote no file. A line that is not a record (a crash mid-write) is
    skipped."""
    result = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return result
    for line in lines:
        try:
            result.append(Diagnostic._from_record(json.loads(line), imported))
        except (ValueError, KeyError, TypeError):
            continue
    return result


class CompileError(Exception):
    """amp's compiler rejected the imported step. ``str()`` is its text
    output; ``diagnostics`` the same diagnostics as :class:`Diagnostic`
    records (empty when the failure was not a diagnostic, e.g. a missing
    tool)."""

    def __init__(self, message: str, diagnostics: Optional[List[Diagnostic]] = None):
        super().__init__(message)
        self.diagnostics: List[Diagnostic] = list(diagnostics or [])

    def __reduce__(self):
        return (type(self), (str(self), self.diagnostics))
