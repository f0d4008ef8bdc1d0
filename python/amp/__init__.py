"""amp: train a PyTorch model with a compiled mixed-precision training step.

    step = amp.compile(model, torch.nn.CrossEntropyLoss(), example_inputs=(x, y),
                       optimizer=opt, opt_level="O1", dtype=torch.float16)
    for x, y in loader:
        r = step(x, y)          # r.loss, r.skipped, r.scale
    step.copy_to(model)

The model is imported with torch.export (``_importer``), compiled by
amp-compile (the same amp-pipeline and lowerings as every amp tool) into an
artifact, and run in this process through the ``_native`` extension.
docs/Python.md is the guide.
"""

from __future__ import annotations

from ._api import (MemoryPlan, NonfiniteSource, NumericsError, NumericsReport, Step, StepResult, compile,
                   get_num_threads, get_rank, get_world_size, set_num_threads, to_mlir)
from ._errors import (CompileError, DeviceUnavailableError, Diagnostic, UnsupportedModelError,
                      UnsupportedNode)
from ._calibration import CalibratedOp, Calibration, calibrate
from ._explain import Report, explain

__all__ = [
    "compile",
    "to_mlir",
    "set_num_threads",
    "get_num_threads",
    "get_rank",
    "get_world_size",
    "explain",
    "calibrate",
    "Calibration",
    "CalibratedOp",
    "Report",
    "MemoryPlan",
    "Step",
    "NonfiniteSource",
    "NumericsReport",
    "NumericsError",
    "StepResult",
    "CompileError",
    "Diagnostic",
    "DeviceUnavailableError",
    "UnsupportedModelError",
    "UnsupportedNode",
]
