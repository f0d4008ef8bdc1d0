"""Calibrated autocast: precision decided from the model's measured ranges.

``amp.calibrate`` runs the model's forward and backward in f32 (the O0 step
compiled with ``check_numerics``, whose vector holds each value's largest
magnitude) on a few batches, without changing the model, and records each
op instance's largest output and input magnitude and the largest gradient.
``amp.compile(..., autocast="calibrated", calibration=c)`` then keeps in f32
the ops whose range does not fit the low type (amp-autocast's
``calibration`` option; docs/Numerics.md).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import torch

_FORMAT = "amp-calibration-1"
# The largest finite values of the low types, and their smallest normal ones.
_LARGEST = {torch.float16: 65504.0, torch.bfloat16: 3.3895313892515355e38}
_SMALLEST_NORMAL = {torch.float16: 2.0 ** -14, torch.bfloat16: 2.0 ** -126}
# Ops the calibration does not key: casts (only the narrowing ones are
# measured, so their indices would not match autocast's), and what
# amp-autodiff fuses (the LM head and its loss: it is not an op of the
# forward autocast sees).
_UNKEYED = {"train.cast", "train.linear_cross_entropy"}
# JSON has no inf or NaN: a magnitude that was not finite is written as this.
_NOT_FINITE = 1e300


class CalibratedOp(NamedTuple):
    """One op instance's measured range."""

    module: str
    """The module path of the op (``"encoder.ffn.wi"``; ``""`` at the top)."""
    op: str
    """The train op (``"train.matmul"``)."""
    index: int
    """Its index among the ops of that name in that module (program order)."""
    file: str
    line: int
    output: float
    """The largest magnitude of its output over the calibration batches."""
    inputs: float
    """The largest magnitude of its inputs."""
    smallest: float = 0.0
    """The smallest nonzero magnitude of its output (0: none measured)."""

    def underflow_headroom(self, dtype: torch.dtype = torch.float16) -> float:
        """How many times ``smallest`` is ``dtype``'s smallest normal value
        (below 1: some of the output is subnormal or flushes to zero)."""
        return self.smallest / _SMALLEST_NORMAL[dtype] if self.smallest > 0 else math.inf

    def headroom(self, dtype: torch.dtype = torch.float16) -> float:
        """How many times the larger of ``output`` and ``inputs`` fits in
        ``dtype``'s largest finite value (below 1: it overflows)."""
        largest = max(self.output, self.inputs)
        return _LARGEST[dtype] / largest if largest > 0 else math.inf


class Calibration:
    """The ranges ``amp.calibrate`` measured; ``save``/``load`` as JSON
    keyed by op instance (module path, op, index), which
    ``amp.compile(..., autocast="calibrated", calibration=...)`` and
    ``amp-run --autocast=calibrated --calibration=FILE`` read."""

    def __init__(self, ops: List[CalibratedOp], largest_gradient: float, batches: int,
                 model: str = "", smallest_gradient: float = 0.0):
        self.ops = ops
        self.largest_gradient = largest_gradient
        """The largest magnitude of any value of the backward, unscaled."""
        self.smallest_gradient = smallest_gradient
        """The smallest nonzero magnitude of the parameters' gradients,
        unscaled (0: none measured)."""
        self.batches = batches
        self.model = model

    def max_loss_scale(self, dtype: torch.dtype = torch.float16) -> float:
        """The largest loss scale the measured gradients allow in ``dtype``
        (its largest value over the largest gradient)."""
        if self.largest_gradient <= 0:
            return math.inf
        return _LARGEST[dtype] / self.largest_gradient

    def min_loss_scale(self, dtype: torch.dtype = torch.float16) -> float:
        """The smallest loss scale that keeps the smallest measured gradient
        a normal ``dtype`` value (below it, it underflows)."""
        if self.smallest_gradient <= 0:
            return 0.0
        return _SMALLEST_NORMAL[dtype] / self.smallest_gradient

    def overflowing(self, dtype: torch.dtype = torch.float16,
                    margin: float = 2.0) -> List[CalibratedOp]:
        """The ops whose range (the larger of output and inputs) times
        ``margin`` does not fit ``dtype``: those calibrated autocast keeps in
        f32."""
        return [op for op in self.ops if op.headroom(dtype) < margin
                and math.isfinite(max(op.output, op.inputs))]

    def to_json(self) -> Dict[str, Any]:
        def entry(o: CalibratedOp) -> Dict[str, Any]:
            record = {"module": o.module, "op": o.op, "index": o.index, "file": o.file,
                      "line": o.line, "output": _finite(o.output), "inputs": _finite(o.inputs),
                      "smallest": o.smallest}
            # Not finite in f32 already (a mask's -inf): amp-autocast keeps
            # the lists' decision for it.
            if not (math.isfinite(o.output) and math.isfinite(o.inputs)):
                record["nonfinite"] = True
            return record
        return {"format": _FORMAT, "model": self.model, "batches": self.batches,
                "largest_gradient": _finite(self.largest_gradient),
                "smallest_gradient": self.smallest_gradient,
                "ops": [entry(o) for o in self.ops]}

    def save(self, path: str) -> None:
        """Writes the calibration as JSON (atomically)."""
        directory = os.path.dirname(os.path.abspath(path))
        with tempfile.NamedTemporaryFile("w", dir=directory, delete=False,
                                         suffix=".tmp") as f:
            json.dump(self.to_json(), f, indent=1)
        os.replace(f.name, path)

    @classmethod
    def load(cls, path: str) -> "Calibration":
        """Reads a calibration ``save`` wrote; ``ValueError`` if it is not one."""
        with open(path) as f:
            record = json.load(f)
        if not isinstance(record, dict) or record.get("format") != _FORMAT:
            raise ValueError(f"{path} is not an amp calibration (format {_FORMAT})")
        def magnitude(o: Dict[str, Any], key: str) -> float:
            value = float(o.get(key, 0))
            return math.inf if o.get("nonfinite") and value >= _NOT_FINITE else value
        ops = [CalibratedOp(o["module"], o["op"], int(o["index"]), o.get("file", ""),
                            int(o.get("line", 0)), magnitude(o, "output"), magnitude(o, "inputs"),
                            float(o.get("smallest", 0)))
               for o in record["ops"]]
        return cls(ops, float(record.get("largest_gradient", 0)), int(record.get("batches", 0)),
                   record.get("model", ""), float(record.get("smallest_gradient", 0)))

    def _file(self) -> str:
        """The calibration as a file amp-compile reads: content-addressed, so
        the same calibration is the same file (and the same cache key)."""
        text = json.dumps(self.to_json(), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:24]
        path = os.path.join(tempfile.gettempdir(), f"amp-calibration-{digest}.json")
        if not os.path.exists(path):
            with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False,
                                             suffix=".tmp") as f:
                f.write(text)
            os.replace(f.name, path)
        return path

    def report(self, dtype: torch.dtype = torch.float16, margin: float = 2.0) -> str:
        """Each op's range and headroom against ``dtype``, and the largest
        loss scale the gradients allow."""
        name = {torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
        lines = [f"calibration of {self.model or 'the model'} over {self.batches} batch(es), "
                 f"against {name} (largest {_LARGEST[dtype]:.6g}, margin {margin:g}; "
                 f"smallest normal {_SMALLEST_NORMAL[dtype]:.3g}):",
                 f"{'module':<28} {'op':<24} {'output':>11} {'inputs':>11} {'headroom':>9} "
                 f"{'smallest':>10} {'underflow':>9}  where"]
        for o in self.ops:
            room = o.headroom(dtype)
            finite = math.isfinite(max(o.output, o.inputs))
            flag = ("  (not finite in f32: the lists decide)" if not finite
                    else "  -> f32" if room < margin else "")
            low = o.underflow_headroom(dtype)
            lines.append(f"{(o.module or '<top>'):<28} {o.op + ' #' + str(o.index):<24} "
                         f"{o.output:>11.4g} {o.inputs:>11.4g} {room:>9.3g} "
                         f"{o.smallest:>10.3g} {low:>9.3g}  {o.file}:{o.line}{flag}")
        lines.append(f"largest gradient {self.largest_gradient:.4g}: loss scales up to "
                     f"{self.max_loss_scale(dtype):.4g} keep the gradients in {name}")
        if self.smallest_gradient > 0:
            lines.append(f"smallest gradient {self.smallest_gradient:.4g}: loss scales from "
                         f"{self.min_loss_scale(dtype):.4g} keep it a normal {name} value")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def _finite(x: float) -> float:
    return x if math.isfinite(x) else _NOT_FINITE


def calibrate(model: torch.nn.Module, loss_fn: Optional[Callable],
              batches: Iterable[Sequence[torch.Tensor]]) -> Calibration:
    """Measures ``model``'s ranges in f32: the forward and backward of
    ``loss_fn(model(*inputs), target)`` on each of ``batches`` ((inputs...,
    target) tuples; a few are enough), as the O0 step with
    ``check_numerics`` computes them, without an update. Records each op
    instance's largest output and input magnitude (by module path, op and
    index) and the largest gradient. The model is not changed."""
    from . import _api
    batches = [tuple(b) for b in batches]
    if not batches:
        raise ValueError("calibrate needs at least one batch")
    # An update that changes nothing: plain SGD at learning rate 0.
    frozen = torch.optim.SGD([p for p in model.parameters()], lr=0.0)
    step = _api.compile(model, loss_fn, batches[0], optimizer=frozen, opt_level="O0",
                        check_numerics=True, _smallest_magnitudes=True)
    sites = step._native.numerics_sites()
    outputs: Dict[Tuple[str, str, int], List[float]] = {}
    keys: List[Tuple[int, Tuple[str, str, int]]] = []
    seen: Dict[Tuple[str, str], int] = {}
    for i, site in enumerate(sites):
        if site["kind"] != "op" or site["stage"] != "forward" or site["result"] > 0:
            continue
        if site["op"] in _UNKEYED:
            continue
        index = seen.get((site["module"], site["op"]), 0)
        seen[(site["module"], site["op"])] = index + 1
        keys.append((i, (site["module"], site["op"], index)))
    largest_gradient = 0.0
    smallest: Dict[Tuple[str, str, int], float] = {}
    smallest_gradient = math.inf
    # The parameters' gradients: the backward values the optimizer reads
    # (what no later backward op reads).
    read = {k for site in sites if site["kind"] == "op" and site["stage"] == "backward"
            for k in site["inputs"]}
    measured = sum(site["check"] >= 0 for site in sites)
    for batch in batches:
        step(*batch)
        magnitudes = step._native.numerics_magnitudes()

        def least(k: int) -> float:
            check = sites[k]["check"]
            m = magnitudes[measured + check] if check >= 0 and len(magnitudes) == 2 * measured \
                else 0.0
            return m if m > 0 else math.inf
        for i, key in keys:
            smallest[key] = min(smallest.get(key, math.inf), least(i))
        for k, site in enumerate(sites):
            if site["kind"] == "op" and site["stage"] == "backward" and k not in read:
                smallest_gradient = min(smallest_gradient, least(k))

        def value(k: int) -> float:
            site = sites[k]
            m = magnitudes[site["check"]] if site["check"] >= 0 else site["magnitude"]
            return math.inf if math.isnan(m) else m
        for i, key in keys:
            out = value(i)
            # The model's own constants (an attention mask's -inf) are not
            # ranges to fit; a value not finite already in f32 decides
            # nothing (its entry is marked).
            inp = max((value(k) for k in sites[i]["inputs"]
                       if sites[k]["kind"] != "constant"), default=0.0)
            best = outputs.setdefault(key, [0.0, 0.0])
            best[0], best[1] = max(best[0], out), max(best[1], inp)
        for k, site in enumerate(sites):
            if site["kind"] == "op" and site["stage"] == "backward":
                largest_gradient = max(largest_gradient, value(k))
    ops = [CalibratedOp(module, op, index, sites[i]["file"], sites[i]["line"],
                        *outputs[(module, op, index)],
                        smallest[(module, op, index)]
                        if math.isfinite(smallest[(module, op, index)]) else 0.0)
           for i, (module, op, index) in keys]
    return Calibration(ops, largest_gradient, len(batches),
                       f"{type(model).__module__}.{type(model).__qualname__}",
                       smallest_gradient if math.isfinite(smallest_gradient) else 0.0)
