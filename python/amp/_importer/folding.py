"""Shape-only subgraphs, computed once at import.

What a model computes from shapes, constants and buffers it never changes
(causal and sliding-window masks built from ``arange`` and comparisons,
position ids, rotary embeddings' cos/sin tables from ``inv_freq``) does not
depend on the batch: PyTorch evaluates it here, on the buffers' real values,
and it enters the step as a constant (``_core._tensor_constant``) where a
step op uses it. What depends on the batch, a parameter or a buffer the
step updates is left to the handlers.
"""

from __future__ import annotations

from typing import Any, Dict

import torch

InputKind = torch.export.graph_signature.InputKind


# Uninitialized tensors: what fills them (bernoulli_) is in the step.
_UNINITIALIZED = {torch.ops.aten.empty.memory_format, torch.ops.aten.new_empty.default,
                  torch.ops.aten.empty_like.default}


def _random(target: Any) -> bool:
    """Whether an op draws random numbers (dropout's masks, bernoulli,
    rand*), or makes a tensor to be filled by one (empty): never folded,
    each step draws anew."""
    tags = getattr(target, "tags", ())
    return torch.Tag.nondeterministic_seeded in tags or target in _UNINITIALIZED


# Ops that update buffers they read although their schema does not say so
# (batch norm's running statistics, in training IR).
_UPDATES_BUFFERS = {torch.ops.aten.batch_norm.default, torch.ops.aten.instance_norm.default}


def _written(node: torch.fx.Node) -> bool:
    """Whether an op of the graph may write the tensor ``node`` holds."""
    for user in node.users:
        if user.op != "call_function":
            continue
        if user.target in _UPDATES_BUFFERS:
            return True
        schema = getattr(user.target, "_schema", None)
        if schema is None:
            continue
        for index, argument in enumerate(schema.arguments):
            value = user.args[index] if index < len(user.args) else \
                user.kwargs.get(argument.name)
            if value is node and argument.alias_info is not None and \
                    argument.alias_info.is_write:
                return True
    return False


def fold(program: torch.export.ExportedProgram) -> Dict[torch.fx.Node, Any]:
    """The value of every node of ``program`` that depends only on constants,
    shapes and unchanging buffers, computed with PyTorch (clones: nothing of
    the model changes). Nodes PyTorch cannot evaluate here are left out."""
    signature = program.graph_signature
    specs = {spec.arg.name: spec for spec in signature.input_specs
             if hasattr(spec.arg, "name")}
    mutated = set(signature.buffers_to_mutate.values())
    folded: Dict[torch.fx.Node, Any] = {}
    for node in program.graph.nodes:
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is None:
                continue
            value = None
            if spec.kind == InputKind.CONSTANT_TENSOR:
                value = program.constants.get(spec.target)
            elif spec.kind == InputKind.BUFFER and spec.target not in mutated and \
                    not _written(node):
                value = program.state_dict.get(spec.target)
                if value is None:  # a non-persistent buffer
                    value = program.constants.get(spec.target)
            if isinstance(value, torch.Tensor):
                folded[node] = value.detach().clone()
        elif node.op == "get_attr":  # a higher-order op's subgraph
            folded[node] = getattr(program.graph_module, node.target)
        elif node.op == "call_function":
            if not all(n in folded for n in node.all_input_nodes) or _random(node.target):
                continue
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: folded[n])
            try:
                with torch.no_grad():
                    folded[node] = node.target(*args, **kwargs)
            except Exception:  # left to its handler, which says what is wrong
                continue
    return folded
