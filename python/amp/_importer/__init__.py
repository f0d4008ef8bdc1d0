"""PyTorch model + loss -> a `train`-dialect forward function (MLIR text).

The model is captured with ``torch.export`` (docs/Python.md says why): its
ATen graph with FakeTensor shapes, parameters and buffers lifted to inputs,
and for every node the module path and the Python stack. Nothing of the
model runs and no buffer changes. Each node is mapped by the handler its
ATen op has in its family's table (one module per op family: contraction,
elementwise, shape, lookup, reduction, normalization, pooling, losses,
dropout); every emitted op carries the user's module path and source line
as its MLIR location, so amp-opt's diagnostics and the precision report
point at the user's code.
"""

from ._core import (Argument, ImportedModel, ImportedNode, Value, float_literal,
                    tensor_type)
from ._program import Training, capture, import_model

__all__ = ["Argument", "ImportedModel", "ImportedNode", "Training", "Value", "capture",
           "float_literal", "import_model", "tensor_type"]
