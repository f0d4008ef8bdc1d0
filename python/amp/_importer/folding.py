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

from typing import Any, Dict, Set

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


def _argument_of(node: torch.fx.Node, index: int, name: str) -> Any:
    return node.args[index] if index < len(node.args) else node.kwargs.get(name)


def _written_nodes(graph: torch.fx.Graph) -> Set[torch.fx.Node]:
    """Every node whose tensor some op of the graph writes, directly or
    through a view of it (``c[0] += 1`` is select, add_, copy_ into the
    select: the buffer itself changes). Such a tensor has one value before
    the write and another after, which one constant cannot be: nothing
    that reads it is folded."""
    written: Set[torch.fx.Node] = set()
    base: Dict[torch.fx.Node, torch.fx.Node] = {}  # a view -> what it views
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in _UPDATES_BUFFERS:
            written.update(n for n in node.all_input_nodes)
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            continue
        for index, argument in enumerate(schema.arguments):
            value = _argument_of(node, index, argument.name)
            if not isinstance(value, torch.fx.Node) or argument.alias_info is None:
                continue
            if argument.alias_info.is_write:
                written.add(value)
            elif schema.returns and any(r.alias_info is not None and
                                        r.alias_info.before_set & argument.alias_info.before_set
                                        for r in schema.returns):
                base[node] = value  # the result views this argument
    for node in list(written):  # a write through a view writes what it views
        while node in base:
            node = base[node]
            written.add(node)
    return written


def fold(program: torch.export.ExportedProgram) -> Dict[torch.fx.Node, Any]:
    """The value of every node of ``program`` that depends only on constants,
    shapes and unchanging buffers, computed with PyTorch (on copies: nothing
    of the model changes). Tensors some op writes are not folded, nor
    anything read from them; nodes PyTorch cannot evaluate here are left to
    their handlers."""
    signature = program.graph_signature
    specs = {spec.arg.name: spec for spec in signature.input_specs
             if hasattr(spec.arg, "name")}
    mutated = set(signature.buffers_to_mutate.values())
    written = _written_nodes(program.graph)
    folded: Dict[torch.fx.Node, Any] = {}
    for node in program.graph.nodes:
        if node in written:
            continue
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is None:
                continue
            value = None
            if spec.kind == InputKind.CONSTANT_TENSOR:
                value = program.constants.get(spec.target)
            elif spec.kind == InputKind.BUFFER and spec.target not in mutated:
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
            schema = getattr(node.target, "_schema", None)
            if schema is not None and any(a.alias_info is not None and a.alias_info.is_write
                                          for a in schema.arguments):
                continue  # an in-place op: its target is in ``written``
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: folded[n])
            try:
                with torch.no_grad():
                    folded[node] = node.target(*args, **kwargs)
            except Exception:  # left to its handler, which says what is wrong
                continue
    return folded
