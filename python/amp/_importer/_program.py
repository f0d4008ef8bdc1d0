"""The captured program -> the forward function: torch.export, the
arguments (parameters, buffers, inputs), each node through its family's
handler, the step's results."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import operator
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import torch

from .._errors import UnsupportedModelError, UnsupportedNode
from ._core import (Argument, ImportedModel, ImportedNode, Value, _Emitter, _Unsupported, _caller,
                    _element, _module_path, _module_type, _operand, _shape, _unwrapped,
                    _user_frame, _user_frame_of_error, float_literal, tensor_type)
from . import (contraction, elementwise, logic, lookup, losses, normalization, pooling, dropout,
               reduction, shape)
from .folding import fold
from .normalization import _emit_batch_norm


_TENSOR = object()  # a tensor leaf of the model's output (_LossModule)


class _LossModule(torch.nn.Module):
    """``loss_fn(model(*inputs), target)`` as one module for torch.export,
    returning the loss and then the tensors of the model's output (which
    evaluation and ``predict`` return). ``loss_fn=None``: the model is
    called with the target too and computes its own loss."""

    def __init__(self, model: torch.nn.Module, loss_fn: Optional[Callable]):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        # The model's output structure, written by the traced forward: in a
        # dict of this instance's own class (export traces the module with
        # copies of its instance attributes).
        type(self).output = {"spec": None, "leaves": []}

    def forward(self, *args):
        if self.loss_fn is None:
            output = self.model(*args)
            loss = _own_loss(output)
        else:
            output = self.model(*args[:-1])
            loss = self.loss_fn(output, args[-1])
        leaves, self.output["spec"] = torch.utils._pytree.tree_flatten(output)
        # (the tensors are the graph's outputs: not kept, FakeTensors)
        self.output["leaves"] = [_TENSOR if isinstance(leaf, torch.Tensor) else leaf
                                 for leaf in leaves]
        return (loss,) + tuple(leaf for leaf in leaves if isinstance(leaf, torch.Tensor))


def _own_loss(output: Any) -> Any:
    """The loss of a model that computes its own (``loss_fn=None``): its
    output itself, its ``loss`` (a HuggingFace ModelOutput, a dict) or the
    first element of a tuple (HuggingFace's ``return_dict=False``)."""
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, dict) and "loss" in output:
        return output["loss"]
    if getattr(output, "loss", None) is not None:
        return output.loss
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    raise TypeError("loss_fn=None: the model must return its loss (a scalar tensor, an "
                    f"output with .loss or ['loss'], or a tuple led by it), it returned "
                    f"{type(output).__name__}")


# The families' tables, merged: one handler per ATen op.
_HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {}
_TUPLE_HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], List[Value]]] = {}
for _family in (contraction, elementwise, shape, lookup, reduction, normalization, pooling,
                losses, dropout):
    _HANDLERS.update(_family.HANDLERS)
    _TUPLE_HANDLERS.update(getattr(_family, "TUPLE_HANDLERS", {}))
_HANDLERS.update(logic.HANDLERS)

# In-place forms: computed as their functional op, whose value then stands
# for the updated tensor in every later use (intermediates only; an
# in-place update of an input, parameter or buffer is refused).
_IN_PLACE = {
    torch.ops.aten.dropout_.default: torch.ops.aten.dropout.default,
    torch.ops.aten.detach_.default: torch.ops.aten.detach.default,
    torch.ops.aten.bernoulli_.float: torch.ops.aten.bernoulli.p,
    torch.ops.aten.add_.Tensor: torch.ops.aten.add.Tensor,
    torch.ops.aten.sub_.Tensor: torch.ops.aten.sub.Tensor,
    torch.ops.aten.mul_.Tensor: torch.ops.aten.mul.Tensor,
    torch.ops.aten.div_.Tensor: torch.ops.aten.div.Tensor,
    torch.ops.aten.relu_.default: torch.ops.aten.relu.default,
    torch.ops.aten.tanh_.default: torch.ops.aten.tanh.default,
    torch.ops.aten.sigmoid_.default: torch.ops.aten.sigmoid.default,
    torch.ops.aten.hardtanh_.default: torch.ops.aten.hardtanh.default,
    torch.ops.aten.leaky_relu_.default: torch.ops.aten.leaky_relu.default,
    torch.ops.aten.silu_.default: torch.ops.aten.silu.default,
    torch.ops.aten.hardswish_.default: torch.ops.aten.hardswish.default,
    torch.ops.aten.hardsigmoid_.default: torch.ops.aten.hardsigmoid.default,
    torch.ops.aten.clamp_.default: torch.ops.aten.clamp.default,
    torch.ops.aten.masked_fill_.Scalar: torch.ops.aten.masked_fill.Scalar,
}


# Checks export records (dtype and shape assertions): nothing to compute.
_CHECKS = {
    torch.ops.aten._assert_tensor_metadata.default,
    torch.ops.aten._assert_scalar.default,
    torch.ops.aten.sym_constrain_range_for_size.default,
}

# Ops that change nothing the step computes.
_IDENTITY = {
    torch.ops.aten.contiguous.default,
    torch.ops.aten.alias.default,
    torch.ops.aten.clone.default,
    torch.ops.aten.lift_fresh_copy.default,
}


def capture(model: torch.nn.Module, loss_fn: Optional[Callable],
            example_inputs: Tuple[torch.Tensor, ...]
            ) -> Tuple[torch.export.ExportedProgram, _LossModule]:
    """torch.export of ``loss_fn(model(*inputs), target)`` in training mode
    (and the module exported, which holds the model's output structure).

    The model's ``training`` flags are set for the capture and restored;
    nothing else of it changes (export runs on FakeTensors).
    """
    if isinstance(example_inputs, list):  # what a DataLoader yields
        example_inputs = tuple(example_inputs)
    if not isinstance(example_inputs, tuple) or len(example_inputs) < 2:
        raise ValueError("example_inputs must be a tuple or list (inputs..., target) "
                         "with at least one input and the target")
    modes = [(m, m.training) for m in model.modules()]
    # momentum=None (a cumulative average) makes batch norm compute its factor
    # 1 / num_batches_tracked from the buffer's value, which export cannot
    # trace: captured with a number instead (the importer emits the average
    # for these modules: _cumulative_batch_norms), then restored.
    cumulative = [m for m in model.modules()
                  if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and
                  m.momentum is None and m.track_running_stats]
    try:
        model.train()
        for m in cumulative:
            m.momentum = 0.0
        module = type("_LossModule", (_LossModule,), {})(model, loss_fn)
        return torch.export.export(module, example_inputs, strict=False), module
    finally:
        for m, mode in modes:
            m.training = mode
        for m in cumulative:
            m.momentum = None


def _forward_parameter_names(model: torch.nn.Module, count: int) -> List[str]:
    """The names of ``model.forward``'s first ``count`` positional parameters;
    "input.<k>" past a ``*args`` or where the signature cannot be read."""
    names: List[str] = []
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    for p in parameters:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or len(names) == count:
            break
        names.append(p.name)
    names += [f"input.{k}" for k in range(len(names), count)]
    # Two parameters of one name cannot happen; "labels" is the target's.
    return [n if n != "labels" else f"input.{k}" for k, n in enumerate(names)]


def _cumulative_batch_norms(model: torch.nn.Module) -> Set[str]:
    """The names (with a trailing '.') of the batch-norm modules whose running
    statistics are a cumulative average (momentum=None)."""
    return {(name + ".") if name else "" for name, m in model.named_modules()
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and
            m.momentum is None and m.track_running_stats}


@dataclasses.dataclass
class Training:
    """What of the parameters the optimizer trains, by name: each trained
    parameter's group and (where groups differ in it) weight decay. A
    parameter without an entry is frozen: an argument of the step that is
    neither updated nor differentiated."""

    groups: Dict[str, Tuple[int, Optional[float]]]


def import_model(model: torch.nn.Module, loss_fn: Optional[Callable],
                 example_inputs: Tuple[torch.Tensor, ...],
                 training: Optional[Training] = None,
                 strict: bool = True) -> ImportedModel:
    """Imports ``loss_fn(model(*inputs), target)`` (``loss_fn=None``: the
    model's own loss of ``model(*inputs, target)``) as a forward function.

    ``training`` says which parameters are trained, in which group; without
    it, those with ``requires_grad`` are, in one group.
    Raises UnsupportedModelError listing every node that cannot be mapped;
    with ``strict=False`` returns them in ``problems`` instead (and no text).
    """
    if training is None:
        training = Training({name: (0, None) for name, p in model.named_parameters()
                             if p.requires_grad})
    try:
        program, exported = capture(model, loss_fn, example_inputs)
    except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError,
            RuntimeError) as error:  # data-dependent control flow and shapes
        path, line = _user_frame_of_error(error)
        problem = UnsupportedNode(
            "", "torch.export", "<capture>", line,
            str(error).splitlines()[0] + " (control flow or a shape that depends on "
            "tensor values cannot be compiled into a static step)", path)
        if not strict:
            return ImportedModel("", [], [], [], [problem])
        raise UnsupportedModelError([problem]) from error
    signature = program.graph_signature
    graph = program.graph
    caller = _caller()
    em = _Emitter()
    em.folded = fold(program)
    cumulative = _cumulative_batch_norms(model)
    arguments: List[Argument] = []
    problems: List[UnsupportedNode] = []

    input_specs = {spec.arg.name: spec for spec in signature.input_specs}
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    user_inputs = [n for n in placeholders
                   if input_specs[n.name].kind == torch.export.graph_signature.InputKind.USER_INPUT]
    if len(user_inputs) < 2:
        problems.append(UnsupportedNode(
            "", "inputs", "<model>", 0,
            "no model input: example_inputs is (inputs..., target)"))
    # Tied weights: export lifts each name of a shared Parameter (or
    # buffer) as its own placeholder; they become one argument, named by
    # the model's first name for the tensor (as named_parameters() does).
    named: Dict[str, torch.Tensor] = {}
    first_name: Dict[int, str] = {}
    for name, tensor in itertools.chain(model.named_parameters(remove_duplicate=False),
                                        model.named_buffers(remove_duplicate=False)):
        named[name] = tensor
        first_name.setdefault(id(tensor), name)
    argument_of: Dict[str, Value] = {}
    counters: List[str] = []
    state_updates: List[Tuple[int, str]] = []
    # The inputs' names: the forward's own parameter names where it has
    # them (``def forward(self, image, features)``), by position.
    input_names = _forward_parameter_names(model, len(user_inputs) - 1)
    ordered: List[torch.fx.Node] = list(user_inputs)
    ordered += [n for n in placeholders if n not in user_inputs]
    for n in ordered:
        spec = input_specs[n.name]
        shape, element = _shape(n), _element(n)
        group, decay = 0, None
        if n in user_inputs:
            kind = "labels" if n is user_inputs[-1] else "input"
            position = user_inputs.index(n)
            name = input_names[position] if kind == "input" and \
                position < len(input_names) else n.name
            integer_mask = kind == "input" and _only_made_bool(n)
            if kind == "input" and (n.meta["val"].dtype == torch.bool or integer_mask):
                # A mask (key_padding_mask, attn_mask; a tokenizer's integer
                # attention_mask the model only turns into bool): f32 0 / 1
                # in the step; masked_fill reads it exactly (_masked_fill).
                arguments.append(Argument(name, kind, shape, "f32", boolean=True,
                                          from_integers=integer_mask))
                em.values[n] = (f"%a{len(arguments) - 1}", shape, "f32")
                em.masks.add(em.values[n][0])
                continue
        else:
            name = _unwrapped(spec.target)
            if name in named:
                name = first_name[id(named[name])]
                if name in argument_of:
                    em.values[n] = argument_of[name]
                    continue
            if n in em.folded:
                # A constant, or a buffer the step never changes: the step
                # reads a float buffer that a step op uses directly as a
                # frozen argument (loaded from the model, returned
                # unchanged); everything else of it is computed at import.
                in_step = any(u not in em.folded for u in n.users)
                if not (in_step and spec.kind == torch.export.graph_signature.InputKind.BUFFER
                        and n.meta["val"].dtype.is_floating_point and name in named):
                    continue
                arguments.append(Argument(name, "frozen", shape, element))
                em.values[n] = Value(f"%a{len(arguments) - 1}", shape, element)
                argument_of[name] = em.values[n]
                state_updates.append((len(arguments) - 1, em.values[n].name))
                continue
            if spec.kind == torch.export.graph_signature.InputKind.PARAMETER:
                kind = "param" if name in training.groups else "frozen"
                group, decay = training.groups.get(name, (0, None))
            elif name.endswith("num_batches_tracked") and \
                    name[:-len("num_batches_tracked")] in cumulative:
                # momentum=None: the step counts (in f32, exact to 2^24) and
                # averages with 1 / count.
                arguments.append(Argument(name, "state", (), "f32"))
                em.values[n] = (f"%a{len(arguments) - 1}", (), "f32")
                argument_of[name] = em.values[n]
                em.counts[name] = em.values[n]
                continue
            elif name.endswith("num_batches_tracked"):
                counters.append(name)
                em.values[n] = ("<counter>", shape, element)
                continue
            else:
                kind = "state"
        arguments.append(Argument(name, kind, shape, element, group, decay))
        if kind == "param":
            em.params.add(n)
        em.values[n] = (f"%a{len(arguments) - 1}", shape, element)
        argument_of[name] = em.values[n]
        if kind == "frozen":  # state that the step returns unchanged
            state_updates.append((len(arguments) - 1, em.values[n][0]))

    em.argument_count = len(arguments)
    for index, argument in enumerate(arguments):  # token ids, labels
        if argument.kind in ("input", "labels") and argument.element == "i32":
            em.origin[f"%a{index}"] = index
    nodes: List[ImportedNode] = []
    outputs: Tuple[Any, ...] = ()
    for node in graph.nodes:
        if node.op != "call_function":
            if node.op == "output":
                outputs = tuple(node.args[0])
            continue
        path, line = _user_frame(node)
        if line == 0:  # all of it in torch (a loss module): the user's call
            path, line = caller
        module = _module_path(node)
        where = f'"{path}":{line}:0'
        em.location = f'loc("{module}"({where}))' if module else f"loc({where})"
        em.where = (module, path, line)
        target = node.target
        first_line = len(em.lines)
        record = ImportedNode(node.name, str(target), module, _module_type(node) or "",
                              path, line, [], folded=node in em.folded)
        nodes.append(record)
        if node in em.folded or target in _CHECKS:
            continue  # computed at import (a constant where used), or a check
        try:
            if target is torch.ops.aten.add_.Tensor and node.args and \
                    node.args[0] in em.values and \
                    (em.values[node.args[0]][0] == "<counter>" or
                     em.values[node.args[0]] in em.counts.values()):
                continue  # num_batches_tracked += 1: counted in Python or by batch norm
            if target in _IDENTITY:
                em.values[node] = _operand(em, node.args[0])
                continue
            if target is torch.ops.aten.batch_norm.default:
                em.values[node] = _emit_batch_norm(em, node, arguments, state_updates)
                continue
            if target in _TUPLE_HANDLERS:  # a tuple of values, taken by getitem
                em.values[node] = _TUPLE_HANDLERS[target](em, node)
                continue
            if target is operator.getitem:  # an element of a tuple-valued node
                parts = em.values.get(node.args[0])
                if not isinstance(parts, list):
                    raise _Unsupported("an element of a result amp does not split")
                em.values[node] = parts[node.args[1]]
                continue
            functional = _IN_PLACE.get(target, target)
            handler = _HANDLERS.get(functional)
            if handler is None:
                raise _Unsupported("no mapping to the train dialect")
            if functional is not target and node.args[0].op == "placeholder":
                raise _Unsupported(f"an in-place update of {node.args[0].name}, an input, "
                                   "parameter or buffer of the model")
            name = handler(em, node)
            # booleans are f32 0 / 1 in the step (masks)
            element = "f32" if name in em.masks else _element(node)
            em.values[node] = Value(name, _shape(node), element)
            if functional is not target:
                em.values[node.args[0]] = em.values[node]
        except _Unsupported as reason:
            del em.lines[first_line:]  # a failed node's partial ops (no text is made)
            record.blocking = str(reason)
            problems.append(UnsupportedNode(
                module, _module_type(node) or "", str(target), line, str(reason), path))
            # Keep going with a stand-in so every offending node is listed.
            em.values[node] = ("<unsupported>", _shape(node) if "val" in node.meta and
                               hasattr(node.meta["val"], "shape") else (), "f32")
        finally:  # the train ops this node became (whichever branch made them)
            record.train_ops = [line.split(" = ", 1)[1].split(" ", 1)[0]
                                for line in em.lines[first_line:]]
    loss_value, returned, leaves = _outputs(em, exported, outputs, problems, caller)
    if problems:
        if not strict:
            return ImportedModel("", arguments, counters, nodes, problems)
        raise UnsupportedModelError(problems)
    for name, value in em.counts.items():  # each cumulative average's count
        index = next(i for i, a in enumerate(arguments) if a.name == name)
        if value[0] != f"%a{index}":
            state_updates.append((index, value[0]))

    if em.counter_argument is not None:  # the dropout masks' step counter
        arguments.append(Argument("amp.dropout_step", "counter", (), "i32"))
        index = len(arguments) - 1
        assert em.counter_argument == f"%a{index}"
        em.lines.append(f"  %step_next = train.increment {em.counter_argument} : tensor<i32>")
        state_updates.append((index, "%step_next"))

    # The step's ABI: the loss, then each state argument's new value in
    # argument order.
    state_updates.sort()
    signature_text = ",\n".join(_argument_text(i, a) for i, a in enumerate(arguments))
    results = ["tensor<f32>"] + [tensor_type(arguments[i].shape, arguments[i].element)
                                 for i, _ in state_updates]
    returns = [loss_value] + [value for _, value in state_updates]
    types = list(results)
    # The model's outputs (train.output): what evaluation and predict return.
    for value in returned:
        results.append(value.type + " {train.output}")
        types.append(value.type)
        returns.append(value.name)
    text = ("func.func @forward(\n" + signature_text + "\n  ) -> (" + ", ".join(results) +
            ") {\n" + "\n".join(em.lines) + "\n  return " + ", ".join(returns) + " : " +
            ", ".join(types) + "\n}\n")
    return ImportedModel(text, arguments, counters, nodes, [], em.index_checks,
                         exported.output["spec"], leaves, loss_fn is None)


def _outputs(em: _Emitter, exported: _LossModule, outputs: Tuple[Any, ...],
             problems: List[UnsupportedNode], caller: Tuple[str, int]
             ) -> Tuple[str, List[Value], List[Any]]:
    """The loss's value, the model's float outputs (the forward's
    train.output results) and what each leaf of the model's output is
    (ImportedModel.output_leaves)."""
    path, line = caller
    loss = outputs[0] if outputs else None
    value = getattr(loss, "meta", {}).get("val")
    if not isinstance(value, torch.Tensor) or value.dim() != 0 or \
            not value.dtype.is_floating_point:
        what = (f"a {value.dtype} tensor of shape {list(value.shape)}"
                if isinstance(value, torch.Tensor) else repr(value))
        problems.append(UnsupportedNode(
            "", "loss", "<loss>", line,
            f"the loss must be a scalar float tensor (a mean or sum), it is {what}", path))
        return "", [], []
    loss_value = em.values.get(loss, ("<unsupported>",))[0]
    returned: List[Value] = []
    leaves: List[Any] = []
    tensors = iter(outputs[1:])
    for leaf in exported.output["leaves"]:
        if leaf is not _TENSOR:
            leaves.append(("value", leaf))
            continue
        node = next(tensors)
        dtype = getattr(getattr(node, "meta", {}).get("val"), "dtype", None)
        if dtype is None or not dtype.is_floating_point:
            leaves.append(("tensor", dtype))
            continue
        try:
            value = _operand(em, node)
        except _Unsupported:
            leaves.append(("tensor", dtype))
            continue
        if value.name in em.masks or value.name.startswith("<"):
            leaves.append(("tensor", dtype))
            continue
        leaves.append(len(returned))
        returned.append(value)
    return loss_value, returned, leaves


def _only_made_bool(node: torch.fx.Node) -> bool:
    """Whether an integer input is used only through conversions to bool
    (HuggingFace's attention_mask: ``mask.to(torch.bool)``)."""
    if node.meta["val"].dtype.is_floating_point or node.meta["val"].dtype == torch.bool:
        return False
    conversions = {torch.ops.aten.to.dtype, torch.ops.aten.to.dtype_layout,
                   torch.ops.aten.to.device, torch.ops.aten._to_copy.default}
    users = [u for u in node.users if u.target not in _CHECKS]
    return bool(users) and all(
        u.target in conversions and getattr(u.meta.get("val"), "dtype", None) == torch.bool
        for u in users)


def _argument_text(index: int, a: Argument) -> str:
    attrs = ""
    if a.kind == "param":
        extra = f", train.param_group = {a.group} : i64" if a.group else ""
        if a.weight_decay is not None:
            extra += f", train.weight_decay = {float_literal(a.weight_decay)} : f64"
        attrs = f" {{train.param, train.init = #train.init<zeros>{extra}}}"
    elif a.kind in ("state", "frozen"):
        attrs = " {train.state, train.init = #train.init<zeros>}"
    elif a.kind == "counter":  # dropout's: starts where the run's seed says
        attrs = " {train.state, train.init = #train.init<seed>}"
    # The model's name of a parameter or buffer: amp-run --init-from matches
    # a state_dict's tensors by it; an input's (the forward's parameter
    # name): amp-run --dataset=safetensors finds its tensor by it.
    name = f' loc("{a.name}")' if attrs or a.kind == "input" else ""
    return f"    %a{index}: {tensor_type(a.shape, a.element)}{attrs}{name}"
