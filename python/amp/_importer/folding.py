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

from typing import Any, Dict, Set, Tuple

import torch

InputKind = torch.export.graph_signature.InputKind


# Uninitialized tensors: what fills them (bernoulli_) is in the step.
_UNINITIALIZED = {torch.ops.aten.empty.memory_format, torch.ops.aten.new_empty.default,
                  torch.ops.aten.empty_like.default}


# Ops whose result depends on their tensor input's shape and type alone
# (``x.new_zeros(...)``): folded even when the input is computed in the step.
_SHAPE_ONLY = {torch.ops.aten.new_zeros.default, torch.ops.aten.new_ones.default,
               torch.ops.aten.new_full.default, torch.ops.aten.zeros_like.default,
               torch.ops.aten.ones_like.default, torch.ops.aten.full_like.default}


def _stand_in(node: torch.fx.Node) -> Any:
    """A tensor of ``node``'s shape and type, for an op that reads neither
    its values nor more than its metadata."""
    val = node.meta.get("val")
    return torch.zeros(tuple(int(d) for d in val.shape), dtype=val.dtype)


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


def _written_nodes(graph: torch.fx.Graph) -> Tuple[Set[torch.fx.Node],
                                                    Dict[torch.fx.Node, torch.fx.Node]]:
    """Every node whose tensor some op of the graph writes, directly or
    through a view of it (``c[0] += 1`` is select, add_, copy_ into the
    select: the buffer itself changes), and each view's root tensor."""
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
    # every view of a written tensor is written too
    for view, viewed in base.items():
        root = viewed
        while root in base:
            root = base[root]
        if root in written:
            written.add(view)
    # map each view to its root tensor
    roots = {}
    for view in base:
        root = base[view]
        while root in base:
            root = base[root]
        roots[view] = root
    return written, roots


def fold(program: torch.export.ExportedProgram) -> Dict[torch.fx.Node, Any]:
    """The value of every node of ``program`` that depends only on constants,
    shapes and unchanging buffers, computed with PyTorch in graph order (on
    copies: nothing of the model changes).

    A tensor that some op writes in place (directly or through a view) is
    folded only when no step op reads it: every folded reader sees it as
    PyTorch would at that point (Swin's attention mask, built by filling
    slices of a zero tensor), but a step op would see its last value, which
    need not be the one it read. Such tensors, and what depends on them,
    are left to the handlers (which refuse in-place updates). Buffers the
    step updates and nodes PyTorch cannot evaluate here are not folded."""
    signature = program.graph_signature
    specs = {spec.arg.name: spec for spec in signature.input_specs
             if hasattr(spec.arg, "name")}
    mutated = set(signature.buffers_to_mutate.values())
    written, base = _written_nodes(program.graph)
    # A buffer the graph writes is state: its new value must reach the model
    # (num_batches_tracked += 1, batch norm's statistics), so never folded.
    excluded: Set[torch.fx.Node] = {n for n in written if n.op == "placeholder"}
    for _ in range(8):  # until no written tensor that a step op reads is folded
        folded = _fold_once(program, specs, mutated, excluded)
        bad = set()
        for node in written:
            group = [node] + [v for v, b in base.items() if b is node]
            if node in folded and any(
                    user.op == "call_function" and user not in folded and
                    not _writes(user, member)
                    for member in group for user in member.users):
                bad.update(group)
        if not bad - excluded:
            return folded
        excluded |= bad
    return folded


def _writes(node: torch.fx.Node, target: torch.fx.Node) -> bool:
    """Whether ``node`` is an in-place op writing ``target``."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    return any(_argument_of(node, i, a.name) is target and a.alias_info is not None
               and a.alias_info.is_write for i, a in enumerate(schema.arguments))


def _fold_once(program: torch.export.ExportedProgram, specs, mutated,
               excluded: Set[torch.fx.Node]) -> Dict[torch.fx.Node, Any]:
    folded: Dict[torch.fx.Node, Any] = {}
    for node in program.graph.nodes:
        if node in excluded:
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
            shape_only = node.target in _SHAPE_ONLY
            if _random(node.target) or (not shape_only and (
                    not all(n in folded for n in node.all_input_nodes) or
                    any(n in excluded for n in node.all_input_nodes))):
                continue
            args, kwargs = torch.fx.node.map_arg(
                (node.args, node.kwargs),
                lambda n: folded[n] if n in folded else _stand_in(n))
            try:
                with torch.no_grad():
                    folded[node] = node.target(*args, **kwargs)
            except Exception:  # left to its handler, which says what is wrong
                continue
    return folded
