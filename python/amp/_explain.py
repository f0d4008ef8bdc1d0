"""amp.explain: what amp makes of a model, node by node (docs/Python.md)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import _importer
from ._api import MemoryPlan, _amp_compile, _check_precision, _module_file
from ._errors import CompileError, UnsupportedNode, _read_diagnostics


@dataclasses.dataclass
class TrainOp:
    """One train op a node became, and the precision autocast gives it."""

    op: str  # "train.conv2d"
    precision: str  # "f16", "f32", ... ("-" for ops without a float result)
    reason: str  # "lower list", "follows its input", ...


@dataclasses.dataclass
class ExplainedNode:
    """A node of the captured graph: the ATen op, where it comes from, and
    the train ops it maps to (none for an identity such as ``contiguous``
    or a counter kept in Python such as ``num_batches_tracked``)."""

    op: str
    module: str
    module_type: str
    file: str
    line: int
    train_ops: List[TrainOp]
    folded: bool = False
    """Computed once at import (it depends only on shapes, constants and
    unchanging buffers): a constant of the step where a step op uses it."""
    blocking: str = ""
    """Why amp cannot import the node ("" for one it imports): it blocks
    compilation (the report's ``blocking`` lists it too)."""


@dataclasses.dataclass
class Report:
    """What amp.explain returns; ``str(report)`` is the readable table."""

    opt_level: str
    dtype: str
    nodes: List[ExplainedNode]
    blocking: List[UnsupportedNode]
    ops_by_precision: Dict[str, int]
    activation_bytes: Dict[str, float]
    memory_plan: Optional[MemoryPlan] = None
    """The CPU step's memory plan (amp-plan-memory: the arena of its working
    memory, known before it runs), where the model compiles; the step is
    lowered to plan it, no code is generated."""

    def compute_ops_by_precision(self) -> Dict[str, int]:
        """The forward's train ops per precision, without the ops that only
        move or make values (reshapes, slices, transposes, broadcasts,
        concatenations, constants): what computes in each type."""
        counts: Dict[str, int] = {}
        for n in self.nodes:
            for t in n.train_ops:
                if t.op not in _MOVEMENT and t.precision != "-":
                    counts[t.precision] = counts.get(t.precision, 0) + 1
        return counts

    @property
    def compiles(self) -> bool:
        """Whether amp.compile can compile the model: it imports, and
        amp-pipeline, the verifier and the evaluation function accept it
        (amp-compile --verify-only; no code is generated)."""
        return not self.blocking

    def __str__(self) -> str:
        rows = [("source", "module", "ATen op", "train ops (precision at "
                 f"{self.opt_level} {self.dtype})")]
        for n in self.nodes:
            where = f"{os.path.basename(n.file)}:{n.line}" if n.file else "?"
            module = n.module or "<top>"
            if n.module_type:
                module += f" ({n.module_type})"
            ops = ", ".join(f"{t.op} {t.precision}" + (f" [{t.reason}]" if t.reason else "")
                            for t in n.train_ops) or (
                f"(blocks compilation: {n.blocking})" if n.blocking
                else "(computed at import: shapes, constants, unchanging buffers)" if n.folded
                else "(nothing: identity or kept in Python)")
            rows.append((where, module, n.op, ops))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3]
                 for r in rows]
        out = [f"amp.explain: {len(self.nodes)} nodes"] + lines
        if self.blocking:
            out.append(f"{len(self.blocking)} node(s) block compilation:")
            out += [f"  {b}" for b in self.blocking]
        else:
            counts = ", ".join(f"{k}: {v}" for k, v in sorted(self.ops_by_precision.items()))
            out.append(f"ops by precision: {counts}")
            compute = ", ".join(f"{k}: {v}" for k, v in
                                sorted(self.compute_ops_by_precision().items()))
            movement = sum(1 for n in self.nodes for t in n.train_ops if t.op in _MOVEMENT)
            out.append(f"compute ops by precision: {compute or 'none'} (besides {movement} "
                       "reshapes, slices, transposes, broadcasts and constants)")
            if self.activation_bytes:
                out.append("activation memory: {:.0f} bytes at {} against {:.0f} in f32 "
                           "({:.0%} saved)".format(
                               self.activation_bytes.get("mixed", 0), self.opt_level,
                               self.activation_bytes.get("f32", 0),
                               self.activation_bytes.get("saved_fraction", 0)))
            if self.memory_plan is not None:
                out.append(f"memory plan of the step: {self.memory_plan}")
        return "\n".join(out)


# Train ops that move or make values rather than compute on them.
_MOVEMENT = {"train.reshape", "train.slice", "train.transpose", "train.broadcast",
             "train.concat", "train.constant"}


def _categories() -> Dict[str, str]:
    """Each train op's autocast category at O1 (amp-opt
    --print-precision-table): "lower", "fp32", "promote", "follow", "-"."""
    global _CATEGORY_CACHE
    if _CATEGORY_CACHE is not None:
        return _CATEGORY_CACHE
    try:
        run = subprocess.run([_amp_opt(), "--print-precision-table"], capture_output=True,
                             text=True)
    except (CompileError, OSError):
        return {}  # no tools: the precisions stay "-" (explain never raises)
    categories = {}
    for line in run.stdout.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[1].startswith("`train."):
            categories[cells[1].strip("`")] = cells[2]
    if run.returncode == 0 and categories:
        _CATEGORY_CACHE = categories
    return categories


_CATEGORY_CACHE: Optional[Dict[str, str]] = None


def _static_precision(op: str, opt_level: str, dtype: str) -> TrainOp:
    """An op's precision by its category alone, for a model that does not
    compile (autocast never ran on it): at O0 f32; at O1 the lower and fp32
    lists' types; an op that follows or promotes its inputs, and every op at
    O2/O3, is decided only when the model compiles."""
    if opt_level == "O0":
        return TrainOp(op, "f32", "opt level")
    category = _categories().get(op, "-") if opt_level == "O1" else "-"
    if category == "lower":
        return TrainOp(op, dtype, "lower list (by its category)")
    if category == "fp32":
        return TrainOp(op, "f32", "fp32 list (by its category)")
    return TrainOp(op, "-", "decided when the model compiles")


def _amp_opt() -> str:
    """amp-opt of this build ($AMP_OPT, else next to amp-compile)."""
    explicit = os.environ.get("AMP_OPT")
    if explicit:
        return explicit
    return os.path.join(os.path.dirname(_amp_compile()), "amp-opt")


def _verify(text: str, opt_level: str, dtype: str,
            calibration: Optional[str] = None) -> Tuple[List[UnsupportedNode], Optional[MemoryPlan]]:
    """amp-compile --verify-only of the imported module (amp-pipeline, the
    verifier, the evaluation function, then the CPU lowering for the memory
    plan; no code): each error it reports, at the user's source line where
    its location has one; and the step's memory plan where it compiles (None
    where the CPU lowering fails: that blocks no backend's verification)."""
    with _module_file(text, "amp-explain-") as (directory, source):
        plan_file = os.path.join(directory, "plan.json")
        flags = [f"--opt-level={opt_level}", f"--dtype={dtype}"]
        if calibration:
            flags += ["--autocast=calibrated", f"--calibration={calibration}"]
        run = subprocess.run([_amp_compile(), source, "--verify-only",
                              f"--memory-plan={plan_file}"] + flags,
                             capture_output=True, text=True)
        if run.returncode == 0:
            with open(plan_file) as f:
                return [], MemoryPlan._from_json(f.read())
        # Whether verification itself failed, or the lowering after it.
        diagnostics = os.path.join(directory, "diagnostics.jsonl")
        run = subprocess.run([_amp_compile(), source, "--verify-only",
                              f"--diagnostics-file={diagnostics}"] + flags,
                             capture_output=True, text=True)
        records = _read_diagnostics(diagnostics, source)
    if run.returncode == 0:
        return [], None
    # Each error at its node: module path and the user's line (0 where the
    # location is the imported module's own text).
    problems = [UnsupportedNode(d.module, "", d.op or "amp-compile", d.line, d.message, d.file)
                for d in records if d.severity == "error"]
    summary = []
    for line in run.stderr.splitlines():
        if line.startswith("amp-compile: error:"):  # what failed, if nothing else says
            summary.append(UnsupportedNode("", "", "amp-compile", 0, line.split(
                "error: ", 1)[1].replace(source, "<the imported module>")))
    return problems or summary or [UnsupportedNode(
        "", "", "amp-compile", 0, run.stderr.strip() or f"exited {run.returncode}")], None


def _precisions(text: str, opt_level: str, dtype: str,
                calibration: Optional[str] = None) -> Tuple[List[dict], dict]:
    """amp-autocast + amp-precision-report's JSON for the forward: its ops
    (program order) and the whole function entry."""
    calibrated = f" calibration={{{calibration}}}" if calibration else ""
    with _module_file(text, "amp-explain-") as (directory, source):
        report = os.path.join(directory, "report.json")
        run = subprocess.run(
            [_amp_opt(), source,
             f"--amp-autocast=opt-level={opt_level} dtype={dtype}{calibrated}",
             f"--amp-precision-report=format=json output={report}", "-o", os.devnull],
            capture_output=True, text=True)
        if run.returncode != 0:
            raise CompileError(run.stderr.strip() or f"amp-opt exited {run.returncode}")
        with open(report) as f:
            function = json.load(f)["functions"][0]
    return function["ops"], function


def explain(model: torch.nn.Module, loss_fn: Optional[Callable],
            example_inputs: Tuple[torch.Tensor, ...], *, opt_level: str = "O1",
            dtype: torch.dtype = torch.float16, calibration: Optional[Any] = None,
            calibrate: Optional[Any] = None) -> Report:
    """What amp makes of ``loss_fn(model(*inputs), target)``: every node of
    the captured graph with its module path and source line, the train ops
    it maps to and the precision each gets at ``opt_level`` / ``dtype``
    (amp-autocast's decision and its reason), and every node that blocks
    compilation with the reason; where it compiles, the CPU step's memory
    plan (``report.memory_plan``; the step is lowered, no code generated).
    With ``calibration`` (:func:`amp.calibrate`'s), the precisions are
    calibrated autocast's: an op kept in f32 for its range says
    ``calibrated (measured 1.2e+05)``; ``calibrate=batches`` measures one
    first (``amp.calibrate(model, loss_fn, batches)``: this runs the
    model's step in f32, without changing the model).
    Never raises for an unsupported model (the report lists why); the model
    is not run or changed."""
    dtype_name = _check_precision(opt_level, dtype)
    imported = _importer.import_model(model, loss_fn, example_inputs, strict=False)
    decided: List[dict] = []
    function: dict = {}
    blocking = list(imported.problems)
    plan = None
    if not blocking and calibrate is not None and calibration is None:
        from ._calibration import calibrate as measure
        calibration = measure(model, loss_fn, calibrate)
    if not blocking:
        decided, function = _precisions(imported.text, opt_level, dtype_name,
                                        calibration._file() if calibration is not None
                                        else None)
        blocking, plan = _verify(imported.text, opt_level, dtype_name,
                                 calibration._file() if calibration is not None else None)
    # The report lists the forward's train ops in program order, which is
    # the order the importer emitted them in (autocast adds only casts,
    # listed apart): the k-th op of the report is the k-th emitted.
    queue = list(decided)
    nodes = []
    for n in imported.nodes:
        ops = []
        for name in n.train_ops:
            if queue and queue[0]["op"] == name:
                entry = queue.pop(0)
                ops.append(TrainOp(name, entry["precision"], entry["reason"]))
            elif imported.problems:  # no autocast ran: the op's category says
                ops.append(_static_precision(name, opt_level, dtype_name))
            else:
                ops.append(TrainOp(name, "-", ""))
        nodes.append(ExplainedNode(n.op, n.module, n.module_type, n.file, n.line, ops,
                                   n.folded, n.blocking))
    return Report(opt_level, dtype_name, nodes, blocking,
                  function.get("ops_by_precision", {}), function.get("activation_bytes", {}),
                  plan)
