"""amp.compile and the compiled Step (the public API; see docs/Python.md)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from typing import (Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import torch

from . import _importer
from ._errors import CompileError, DeviceUnavailableError, _read_diagnostics
from ._tools import _find_tool

_LOG = logging.getLogger("amp")
# amp-compile --time-phases' lines: "amp-compile: lowering: 16.28 s".
_PHASE = re.compile(r"^amp-compile: [A-Za-z -]+: \d+\.\d\d s$")

_DTYPE_NAMES = {torch.float16: "f16", torch.bfloat16: "bf16"}
_TORCH_OF = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
             "i32": torch.int32}


def set_num_threads(threads: int) -> None:
    """Sets the threads compiled CPU steps run on: their loops, copies and
    BLAS calls (as ``torch.set_num_threads`` does for PyTorch's CPU ops),
    in this process, for the calling thread's calls: every step that exists
    and those compiled later. The default is the cores available to the
    process (or ``OMP_NUM_THREADS``).
    A step's results do not depend on it: each output is computed by one
    thread, in the same order. Raises ``ValueError`` unless ``threads`` is a
    positive integer."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"set_num_threads needs a positive integer, given {threads!r}")
    from . import _native
    _native.set_num_threads(threads)


_RANK_VARIABLES = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                   ("PMIX_RANK", "PMIX_SIZE"), ("PMI_RANK", "PMI_SIZE"))


def _job(field: int, default: int) -> int:
    """Field ``field`` (0: rank, 1: size) of the mpirun job a data_parallel
    step joined, else of the launcher's environment, else ``default``."""
    native = sys.modules.get(__package__ + "._native")
    joined = native.job() if native is not None else None
    if joined is not None:
        return joined[field]
    for names in _RANK_VARIABLES:
        if names[field] in os.environ:
            return int(os.environ[names[field]])
    return default


def get_rank() -> int:
    """This process's rank in its mpirun job (0 outside one), as
    ``torch.distributed.get_rank``: which shard of each global batch to pass
    a ``data_parallel=True`` step. The joined job's, else read from the
    launcher's environment."""
    return _job(0, 0)


def get_world_size() -> int:
    """The number of processes of this mpirun job (1 outside one), as
    ``torch.distributed.get_world_size``: the ranks a ``data_parallel=True``
    step is compiled for."""
    return _job(1, 1)


def _abort_job_on_uncaught_exception() -> None:
    """Once a process has joined an mpirun job: an exception nobody catches
    prints its traceback, then ends every rank (MPI_Abort), since the other
    ranks would otherwise wait for this one in a collective (or in MPI's
    finalization) for ever. mpi4py's ``python -m mpi4py`` does the same."""
    hook = sys.excepthook
    if getattr(hook, "_amp_aborts_job", False):
        return

    def abort_on_uncaught(kind, value, traceback):
        hook(kind, value, traceback)
        sys.stderr.flush()
        from . import _native
        _native.abort_job(1)

    abort_on_uncaught._amp_aborts_job = True
    sys.excepthook = abort_on_uncaught


def get_num_threads() -> int:
    """The threads compiled CPU steps run on (``torch.get_num_threads``'s
    counterpart): what ``set_num_threads`` set, else the cores available to
    the process (or ``OMP_NUM_THREADS``)."""
    from . import _native
    return _native.get_num_threads()


class NonfiniteSource(NamedTuple):
    """What first held an inf or NaN in a loss-scaled step."""

    stage: str
    """``"forward"`` (the loss or a running statistic: the step keeps its
    running statistics) or ``"backward"`` (a gradient)."""
    what: str
    """``"the loss"``, ``"running statistic bn1.running_var"`` or ``"the
    gradient of fc.weight"``."""
    name: str
    """The tensor's name in the model (``""`` for the loss)."""


class NumericsReport(NamedTuple):
    """Where a step's first inf or NaN was born (``check_numerics=True``):
    the first op, in the step's program order, whose output was not finite
    while its inputs were, or a float input, parameter or buffer that held
    one when the step began. ``str()`` gives one located line."""

    stage: str
    """``"forward"``, ``"backward"`` (an op of the gradient: ``module``
    and ``line`` are its forward op's) or ``"argument"`` (the step's input
    held it)."""
    op: str
    """The train op (``"train.matmul"``); ``""`` for an argument."""
    module: str
    """The module path of the op (``"encoder.ffn.wi"``; ``""`` at the top
    level or for an argument)."""
    file: str
    """The source file of the op's line (``""`` when unknown)."""
    line: int
    """The user's source line (0 when unknown)."""
    value: str
    """``"inf"`` or ``"NaN"``."""
    input_magnitude: float
    """The largest finite magnitude among the op's inputs (how close they
    came to the low type's range; 65504 for float16)."""
    step: int
    """The step (0-based call count) it happened at."""
    argument: str = ""
    """For ``stage="argument"``: the input's or parameter's name; also for
    ``op="train.cast"`` when autocast's cast of that argument to the low
    type overflowed."""
    text: str = ""
    calibrated: Optional[float] = None
    """With calibrated autocast, the magnitude ``amp.calibrate`` measured for
    the op: it has outgrown that range (calibrate again); None otherwise."""

    def __str__(self) -> str:
        return self.text


class NumericsError(FloatingPointError):
    """A step compiled with ``check_numerics="raise"`` made an inf or NaN;
    ``report`` (a :class:`NumericsReport`) says where it was born. The
    step's result is applied as without the option (a skipped step was
    skipped)."""

    def __init__(self, report: NumericsReport):
        self.report = report
        super().__init__(str(report))


class StepResult(NamedTuple):
    """What one call of a Step returns."""

    loss: float
    """The loss of this batch (unscaled, as ``loss_fn`` computes it)."""
    skipped: bool
    """Whether the update was skipped for non-finite gradients (GradScaler)."""
    scale: float
    """The loss scale after this step (the fixed scale of ``loss_scale=S``;
    1.0 without loss scaling)."""
    nonfinite: Optional[NonfiniteSource] = None
    """With loss scaling, the first value of this step that held an inf or
    NaN (the loss, a running statistic, then the gradients in backward's
    order): why it was skipped, or, with ``skipped`` False, a forward value
    that was not finite although the gradients were (the running statistics
    keep their values, the update is applied); None when every one was
    finite."""
    numerics: Optional[NumericsReport] = None
    """With ``check_numerics=True``: where this step's first inf or NaN was
    born (forward or backward op, module path, source line), None when
    every checked value was finite."""


class MemoryPlan(NamedTuple):
    """The plan of a compiled CPU step's working memory (amp-plan-memory):
    its temporaries placed by liveness in one arena, allocated once per step,
    and each runtime call's scratch lent from it. Known before the first
    step runs; the step's measured peak of its own buffers is the arena."""

    arena_bytes: int
    """The arena: the step's planned peak of working memory (activations
    kept for backward, temporaries, runtime scratch; not the state)."""
    live_peak_bytes: int
    """The most bytes live at one point of the step (no arena is smaller)."""
    buffers: int
    """Buffers placed in the arena."""
    unplanned_buffers: int
    """Buffers left to the heap (allocated inside loops, dynamic sizes)."""
    unplanned_bytes: int
    """Their bytes, where static."""
    at_peak: Dict[str, int]
    """The bytes live at that point by the kind of op that first writes
    them ("gemm", "attention", "convolution", "loops", "workspace", ...)."""
    recomputed_values: int = 0
    """Values recomputed in backward instead of kept (``memory_budget``)."""
    recomputed_bytes: int = 0
    """Their bytes."""
    recomputed_gemms: int = 0
    """GEMMs computed again for them (``recompute_gemms=True``)."""

    @classmethod
    def _from_json(cls, text: Optional[str]) -> Optional["MemoryPlan"]:
        """The plan of the manifest's (and amp-compile --memory-plan's) JSON
        record; None for none (no text, or ``{}``)."""
        record = json.loads(text) if text else None
        return cls(**record) if record else None

    def __str__(self) -> str:
        parts = ", ".join(f"{kind} {bytes_ / 2**20:.1f} MiB"
                          for kind, bytes_ in sorted(self.at_peak.items(),
                                                     key=lambda kv: -kv[1]))
        text = (f"{self.arena_bytes / 2**20:.1f} MiB arena for {self.buffers} buffers"
                + (f" (at the peak: {parts})" if parts else ""))
        if self.unplanned_buffers:
            text += f"; {self.unplanned_buffers} allocated in loops or of dynamic size"
        if self.recomputed_values:
            text += (f"; {self.recomputed_values} value"
                     f"{'' if self.recomputed_values == 1 else 's'} recomputed in backward "
                     f"({self.recomputed_bytes / 2**20:.1f} MiB"
                     + (f", {self.recomputed_gemms} GEMM"
                        f"{'' if self.recomputed_gemms == 1 else 's'} again"
                        if self.recomputed_gemms else "") + ")")
        return text


def _amp_compile() -> str:
    """The amp-compile of this amp: $AMP_COMPILE, else the package's own
    (``amp/bin``: an installed amp), else the build tree's (``build/bin``
    beside ``build/python/amp``), else PATH."""
    explicit = os.environ.get("AMP_COMPILE")
    if explicit:
        # A path, or a name on PATH.
        found = explicit if os.sep in explicit else shutil.which(explicit)
        if not found or not os.access(found, os.X_OK) or os.path.isdir(found):
            raise CompileError(f"AMP_COMPILE={explicit} is not an executable amp-compile")
        return found
    found = _find_tool("amp-compile") or shutil.which("amp-compile")
    if not found:
        raise CompileError("amp-compile not found: build amp (scripts/test.sh) "
                           "or set AMP_COMPILE")
    return found


# Hyper-parameters every param group must share (amp compiles them in);
# lr and weight_decay may differ per group.
_SHARED = {"momentum", "dampening", "nesterov", "betas", "eps", "amsgrad", "maximize",
           "foreach", "fused", "capturable", "differentiable", "decoupled_weight_decay"}


def _check_precision(opt_level: str, dtype: torch.dtype) -> str:
    """The low type's name for amp's tools ("f16", "bf16"); ValueError unless
    ``opt_level`` is O0-O3 and ``dtype`` f16 or bf16 (or float32 at O0, which
    computes everything in f32 whatever the low type)."""
    if opt_level not in ("O0", "O1", "O2", "O3"):
        raise ValueError(f"opt_level must be O0, O1, O2 or O3, given {opt_level!r}")
    if opt_level == "O0" and dtype == torch.float32:
        return "f16"
    if dtype not in _DTYPE_NAMES:
        raise ValueError(f"dtype must be torch.float16 or torch.bfloat16 (or torch.float32 at "
                         f"opt_level='O0'), given {dtype}")
    return _DTYPE_NAMES[dtype]


def _optimizer_flags(optimizer: torch.optim.Optimizer,
                     model: torch.nn.Module) -> Tuple[List[str], "_importer.Training"]:
    """amp-compile's flags for a torch.optim optimizer, and which of the
    model's parameters it trains in which group.

    Parameters in no group, or with ``requires_grad=False``, are frozen.
    Groups may differ in ``lr`` (read at every call) and ``weight_decay``.
    """
    if optimizer is None:
        raise ValueError("optimizer is required (torch.optim.SGD, Adam or AdamW)")
    if not isinstance(optimizer, (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)):
        raise ValueError(f"unsupported optimizer {type(optimizer).__name__} "
                         "(torch.optim.SGD, Adam or AdamW)")
    groups = optimizer.param_groups
    for index, g in enumerate(groups[1:], start=1):
        for key in sorted(_SHARED & set(groups[0])):
            if g.get(key) != groups[0].get(key):
                raise NotImplementedError(
                    f"param group {index} has {key}={g.get(key)!r}, group 0 "
                    f"{groups[0].get(key)!r}: amp compiles one value; param groups may "
                    "differ in lr and weight_decay")
    decays = [float(g["weight_decay"]) for g in groups]
    per_param_decay = len(set(decays)) > 1
    owner = {}
    for index, g in enumerate(groups):
        for p in g["params"]:
            owner[id(p)] = index
    names = {}
    for name, p in model.named_parameters():
        if id(p) in owner and p.requires_grad:
            group = owner[id(p)]
            names[name] = (group, decays[group] if per_param_decay else None)
    if not names:
        raise ValueError("the optimizer trains none of the model's parameters")
    training = _importer.Training(names)
    g = groups[0]
    if isinstance(optimizer, torch.optim.SGD):
        if g.get("dampening", 0) != 0 or g.get("maximize", False):
            raise ValueError("SGD with dampening or maximize is not supported")
        flags = ["--optimizer=" + ("momentum" if g["momentum"] else "sgd")]
        if g["momentum"]:
            flags += [f"--momentum={g['momentum']!r}", f"--nesterov={str(bool(g['nesterov'])).lower()}"]
        flags.append(f"--weight-decay={decays[0]!r}")
        return flags, training
    if g.get("amsgrad") or g.get("maximize"):
        raise ValueError("Adam with amsgrad or maximize is not supported")
    adamw = isinstance(optimizer, torch.optim.AdamW)
    if not adamw and any(decays):
        raise NotImplementedError("Adam with weight_decay (coupled L2) is not supported "
                                  "yet; AdamW is")
    beta1, beta2 = g["betas"]
    return ["--optimizer=" + ("adamw" if adamw else "adam"), f"--beta1={beta1!r}",
            f"--beta2={beta2!r}", f"--eps={g['eps']!r}",
            f"--weight-decay={decays[0]!r}"], training


def _to_numpy(tensor: torch.Tensor, element: str) -> np.ndarray:
    """A C-contiguous host array of ``tensor`` in the step's element type."""
    t = tensor.detach().to(device="cpu", dtype=_TORCH_OF[element]).contiguous()
    if element == "bf16":
        t = t.view(torch.int16)
    return t.numpy()


def _from_numpy(array: np.ndarray, element: str) -> torch.Tensor:
    """A tensor sharing ``array``; bf16 (``element``) is held as uint16 bits."""
    t = torch.from_numpy(array)
    if element == "bf16":
        t = t.view(torch.bfloat16)
    return t


class Step:
    """A compiled training step of one model, loss and optimizer.

    Call it with a batch (the model's inputs, then the target) for one
    training step. On the CPU it trains the model's own f32 parameters and
    buffers in place (``compile``'s ``train_in_place``); ``copy_to`` writes
    the trained values into a model's tensors otherwise (and
    ``num_batches_tracked``). Made by :func:`compile`.
    """

    def __init__(self, native: Any, imported: _importer.ImportedModel,
                 model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 static_scale: Optional[float] = None,
                 rebuild: Optional[Callable[[Tuple[torch.Tensor, ...]],
                                            Tuple[Any, _importer.ImportedModel]]] = None,
                 cache_hit: bool = False, train_in_place: bool = True):
        self._static_scale = static_scale
        self._optimizer = optimizer
        # The batch: the model's inputs, then the target (the leading
        # arguments), and how a call names each in its errors.
        self._data = sum(a.kind in ("input", "labels") for a in imported.arguments)
        inputs = self._data - 1
        self._names = (["input"] if inputs == 1 else [f"input {i}" for i in range(inputs)]) + \
            ["target"]
        # Ragged batches (a DataLoader's smaller last batch): the step
        # compiled for each batch shape met, sharing one state
        # (``rebuild`` compiles one for a new batch).
        self._rebuild = rebuild
        self._variants: Dict[Tuple[Tuple[int, ...], ...], Tuple[Any, Any]] = {}
        self._adopt(native, imported)
        self._variants[self._batch_shapes] = (native, imported)
        self._calls = 0
        self._check_numerics: Union[bool, str] = False
        self.mlir: str = imported.text
        """The imported train-dialect module (the input of amp-compile)."""
        self.cache_hit: bool = cache_hit
        """Whether the compile cache held the step (nothing was compiled)."""
        # Dropout masks follow PyTorch's default generator (torch.manual_seed)
        # as PyTorch's own do: their step counter starts at a number drawn
        # from it (amp-run draws it from --seed).
        for index, argument in enumerate(imported.arguments):
            if argument.kind == "counter":
                start = torch.randint(0, 2**31, (), dtype=torch.int32)
                self._native.set(index, _to_numpy(start, "i32"))
        # The model's float parameters and buffers are the step's own memory
        # where it keeps them in f32 on the host (_share_model_memory).
        self._homes: Dict[str, torch.Tensor] = {}
        # num_batches_tracked (by name), counted per call
        self._live_counters: Dict[str, torch.Tensor] = {}
        # (master home, 16-bit parameter's argument, home's version) at O2
        self._low_copies: List[Tuple[torch.Tensor, int, int]] = []
        self.load_from(model)
        if train_in_place:
            self._share_model_memory(model)

    def _share_model_memory(self, model: torch.nn.Module) -> None:
        """Makes the model's f32 parameters and buffers the step's memory for
        them (the CPU backend; the f32 masters at O2): the step reads and
        updates them in place, so the model holds the trained values after
        every call, as after a PyTorch optimizer step, and the process keeps
        one copy instead of two. A tensor that is not a contiguous, 64-byte
        aligned f32 CPU tensor of the argument's shape keeps a copy of its
        own (``copy_to`` updates it)."""
        values = self._model_tensors(model)
        for argument in self._imported.arguments:
            tensor = values.get(argument.name)
            if argument.kind in ("param", "frozen", "state") and tensor is not None and \
                    tensor.dtype == torch.float32 and tensor.device.type == "cpu" and \
                    tensor.is_contiguous() and tensor.data_ptr() % 64 == 0:
                # A tensor of its own on the same storage: the memory stays
                # the step's even if the model's tensor is given other memory
                # later (model.half(), p.data = t); it shares the version
                # counter, which says when the model wrote into it.
                self._homes.setdefault(argument.name, tensor.detach())
        if not self._give_homes():
            self._homes.clear()
            return
        # batch norm's num_batches_tracked (an i32 count in the step): the
        # model's own int64 tensors count the calls.
        seen = set()
        for name in self._imported.counters:
            if name in values and id(values[name]) not in seen:
                seen.add(id(values[name]))
                self._live_counters[name] = values[name]

    def _give_homes(self) -> int:
        """Gives the running native the model's tensors (``_homes``) as the
        memory of the arguments holding them in f32; returns how many it
        took."""
        masters = self._masters()
        taken = set()
        self._low_copies = []
        for index, argument in enumerate(self._imported.arguments):
            tensor = self._homes.get(argument.name)
            if tensor is None or tensor.data_ptr() in taken:
                continue
            home = masters.get(index, index)
            shape, element = self._arguments[home]
            if element != "f32" or tuple(tensor.shape) != tuple(shape):
                continue
            try:
                if not self._native.adopt(home, tensor.data_ptr()):
                    continue
            except RuntimeError:
                continue  # memory another argument has: this one keeps a copy
            taken.add(tensor.data_ptr())
            if home != index:  # O2: the 16-bit parameter follows the model's writes
                self._low_copies.append((tensor, index, tensor._version))
        return len(taken)

    def _follow_model_writes(self) -> None:
        """At O2, the 16-bit parameters of masters the model wrote into since
        the last call (``load_state_dict``, ``nn.init``, in-place ops under
        ``no_grad``: whatever bumps the tensor's version) are set from them,
        so the next forward reads the model's values."""
        for k, (tensor, index, version) in enumerate(self._low_copies):
            if tensor._version != version:
                self._native.set(index, _to_numpy(tensor, self._arguments[index][1]))
                self._low_copies[k] = (tensor, index, tensor._version)

    @property
    def memory_plan(self) -> Optional[MemoryPlan]:
        """The plan of the step's working memory, known before it runs (the
        CPU backend's amp-plan-memory; the batch shape running now), or
        None where the step has none (the CUDA backend, AMP_MEMORY_PLAN=0)."""
        return MemoryPlan._from_json(self._native.memory_plan_json)

    def _adopt(self, native: Any, imported: _importer.ImportedModel) -> None:
        """Makes ``native`` (compiled from ``imported``) the step that runs."""
        self._native = native
        self._imported = imported
        self._arguments = native.arguments  # (shape, element) per argument
        # What a batch tensor must be to be read in place (the fast path of
        # __call__): (shape, dtypes) of each. Integer tensors may also be
        # int64 (narrowed to i32 by the step's binding).
        # A bool input (a mask) is always converted: the step reads f32 0 / 1.
        self._fast = []
        for argument, (shape, element) in zip(imported.arguments, self._arguments[:self._data]):
            dtypes = () if argument.boolean else \
                (torch.int32, torch.int64) if element == "i32" else (_TORCH_OF[element],)
            self._fast.append((torch.Size(shape), dtypes))
        self._batch_shapes = tuple(tuple(shape) for shape, _ in self._fast)
        # The range checks of each integer batch argument (_check_integers).
        self._index_checks: Dict[int, List[Any]] = {}
        for check in imported.index_checks:
            self._index_checks.setdefault(check.argument, []).append(check)
        self._rates: Optional[List[float]] = None  # the learning rates last set

    def _follow_batch(self, batch: Sequence[Any]) -> None:
        """A batch whose tensors all differ from the compiled shapes in their
        leading dimension alone (a DataLoader's last batch without
        drop_last) runs on the
        step compiled for its shapes (compiled on first use, then kept),
        with the state carried over: parameters, masters, optimizer and
        loss-scaler state, buffers. Anything else is left to the shape check
        (a ValueError naming the input)."""
        if self._rebuild is None or len(batch) != self._data or \
                not all(isinstance(t, torch.Tensor) for t in batch):
            return
        shapes = tuple(tuple(t.shape) for t in batch)
        if shapes == self._batch_shapes:
            return
        if any(len(new) != len(old) or not new or new[1:] != old[1:] or new[0] == old[0]
               for new, old in zip(shapes, self._batch_shapes)):
            return  # not every tensor's batch dimension changed
        for index, (name, tensor) in enumerate(zip(self._names, batch)):
            self._check_dtype(index, name, tensor)  # before compiling anything
        if shapes not in self._variants:
            self._variants[shapes] = self._rebuild(tuple(batch))
        self._switch(shapes)

    def _switch(self, shapes: Tuple[Tuple[int, ...], ...]) -> None:
        """Runs the variant compiled for batch ``shapes`` from now on, the
        state carried over from the one that ran so far."""
        native, imported = self._variants[shapes]
        ours, theirs = self._native.persistent, native.persistent
        if [r for r, _ in ours] != [r for r, _ in theirs] or any(
                tuple(self._arguments[i][0]) != tuple(native.arguments[j][0])
                for (_, i), (_, j) in zip(ours, theirs)):
            raise RuntimeError("the step compiled for batch shapes "
                               f"{[list(s) for s in shapes]} keeps another state than "
                               "the first: amp cannot carry it over")
        for (_, i), (_, j) in zip(ours, theirs):
            native.set(j, self._native.get(i))
        native.broadcast_state()
        self._adopt(native, imported)
        self._give_homes()

    def _masters(self) -> Dict[int, int]:
        """Parameter argument -> its f32 master's argument: the masters are
        those of the low-precision parameters, in parameter order."""
        low = [i for i in self._native.params if self._arguments[i][1] != "f32"]
        return dict(zip(low, self._native.masters))

    @staticmethod
    def _model_tensors(model: torch.nn.Module) -> Dict[str, torch.Tensor]:
        """The model's parameters and buffers by every name they have."""
        tensors = dict(model.named_parameters(remove_duplicate=False))
        tensors.update(model.named_buffers(remove_duplicate=False))
        return tensors

    def load_from(self, model: torch.nn.Module) -> None:
        """Sets the step's parameters (and f32 masters) and buffers from
        ``model``. Where the step trains the compiled model's tensors in
        place, this writes into them."""
        values = self._model_tensors(model)
        masters = self._masters()
        # num_batches_tracked (counted here): the model's count less the
        # calls so far, so that copy_to writes this plus the calls.
        self._counted_from = {name: int(values[name]) - self._calls
                              for name in self._imported.counters}
        for index, argument in enumerate(self._imported.arguments):
            if argument.kind not in ("param", "frozen", "state"):
                continue
            value = values[argument.name]
            self._native.set(index, _to_numpy(value, self._arguments[index][1]))
            if index in masters:
                self._native.set(masters[index], _to_numpy(value, "f32"))
        # Data parallel: rank 0's values on every rank (DDP's broadcast).
        self._native.broadcast_state()
        self._sync_counters()

    def _check_tensor(self, index: int, name: str, tensor: torch.Tensor) -> None:
        """``tensor`` fits data argument ``index`` (the inputs, then the target)."""
        expected = tuple(self._imported.arguments[index].shape)
        if tuple(tensor.shape) != expected:
            raise ValueError(f"{name}: expected shape {list(expected)}, given "
                             f"{list(tensor.shape)} (the step is compiled for the "
                             "example_inputs' shapes)")
        self._check_dtype(index, name, tensor)

    def _check_dtype(self, index: int, name: str, tensor: torch.Tensor) -> None:
        """``tensor``'s type fits data argument ``index``."""
        argument = self._imported.arguments[index]
        if argument.boolean:
            if tensor.dtype != torch.bool and not (
                    argument.from_integers and not tensor.is_floating_point() and
                    not tensor.is_complex()):
                kind = "a bool or integer" if argument.from_integers else "a bool"
                raise ValueError(f"{name}: expected {kind} tensor (a mask), given "
                                 f"{tensor.dtype}")
            return
        integer = self._arguments[index][1] == "i32"
        if tensor.is_complex() or tensor.dtype == torch.bool or \
                tensor.is_floating_point() == integer:
            raise ValueError(f"{name}: expected {'an integer' if integer else 'a float'} "
                             f"tensor, given {tensor.dtype}")

    def _check_integers(self, tensors: Sequence[torch.Tensor]) -> None:
        """The integer batch tensors (the leading data arguments) fit the step:
        int64 values within int32 (the step's integer type: never narrowed
        silently), token ids within their embedding's rows, class labels
        within the logits' classes (or ignore_index). An ``IndexError``, as
        PyTorch's embedding and cross entropy raise, before the step runs:
        nothing of its state changes."""
        checks = self._index_checks
        for index, tensor in enumerate(tensors):
            if tensor.is_floating_point() or tensor.dtype == torch.bool or \
                    self._imported.arguments[index].boolean or \
                    (tensor.dtype != torch.int64 and index not in checks):
                continue
            low, high = (int(v) for v in tensor.aminmax()) if tensor.numel() else (0, 0)
            if tensor.dtype == torch.int64 and (low < -2**31 or high >= 2**31):
                raise ValueError(f"{self._names[index]}: int64 value "
                                 f"{low if low < -2**31 else high} does not fit the step's "
                                 "integer type (int32)")
            for check in checks.get(index, ()):
                if 0 <= low and high < check.limit:
                    continue
                part = tensor if check.region is None else \
                    tensor[tuple(slice(a, b) for a, b in check.region)]
                bad = (part < 0) | (part >= check.limit)
                if check.ignore is not None:
                    bad &= part != check.ignore
                if bool(bad.any()):
                    where = f" ({check.file}:{check.line})" if check.line else ""
                    raise IndexError(f"{self._names[index]}: value "
                                     f"{int(part[bad].reshape(-1)[0])} out of range for "
                                     f"{check.what}{where}: valid are 0.."
                                     f"{check.limit - 1}" +
                                     (f" and {check.ignore}" if check.ignore is not None
                                      else ""))

    def _batch_tensor(self, index: int, name: str, tensor: Any) -> torch.Tensor:
        """Batch tensor ``index`` as the step reads it: the tensor itself when
        it is a contiguous CPU tensor of the compiled shape and type (read in
        place where 64-byte aligned, as PyTorch allocates), else checked and
        converted (a new tensor)."""
        shape, dtypes = self._fast[index]
        if type(tensor) is torch.Tensor and tensor.dtype in dtypes and \
                tensor.shape == shape and tensor.is_contiguous() and \
                tensor.device.type == "cpu":
            return tensor
        self._check_tensor(index, name, tensor)
        element = self._arguments[index][1]
        if self._imported.arguments[index].boolean and tensor.dtype != torch.bool:
            tensor = tensor != 0  # an integer mask, as the model's .bool() reads it
        return tensor.detach().to(device="cpu", dtype=_TORCH_OF[element]).contiguous()

    def __call__(self, *batch: torch.Tensor) -> StepResult:
        """One training step on ``batch`` = (inputs..., target)."""
        if len(batch) != self._data:
            raise ValueError(f"a step takes the model's {self._data - 1} input(s) and the "
                             f"target, given {len(batch)} tensors")
        if self._low_copies:  # before another batch shape's step takes the state
            self._follow_model_writes()
        self._follow_batch(batch)
        # The tensors stay referenced here until the step has returned.
        tensors = [self._batch_tensor(i, name, t)
                   for i, (name, t) in enumerate(zip(self._names, batch))]
        self._check_integers(batch)
        if self._native.lr >= 0:
            rates = [float(g["lr"]) for g in self._optimizer.param_groups]
            if rates != self._rates:  # set when a scheduler (or user) changed one
                shape = tuple(self._arguments[self._native.lr][0])
                if len(rates) != (shape[0] if shape else 1):
                    raise ValueError(f"the optimizer has {len(rates)} param groups; the "
                                     f"step was compiled for {shape[0] if shape else 1}")
                self._native.set(self._native.lr,
                                 np.array(rates if shape else rates[0], dtype=np.float32))
                self._rates = rates
        loss, scale, skipped, _collapsed, nonfinite = self._native.step_with(
            [(i, t.data_ptr(), t.element_size()) for i, t in enumerate(tensors)])
        self._calls += 1
        if self._live_counters:
            torch._foreach_add_(list(self._live_counters.values()), 1)
        # The step is the optimizer's step: tell torch's LR schedulers so
        # (they warn of a scheduler stepping before its optimizer otherwise).
        self._optimizer._opt_called = True
        if self._static_scale is not None:
            scale = self._static_scale
        source = None
        if nonfinite >= 0:
            described = self._native.describe_nonfinite(nonfinite)
            if described is not None:
                forward, what, name = described
                source = NonfiniteSource("forward" if forward else "backward", what, name)
        numerics = None
        if self._check_numerics:
            step_index = self._calls - 1
            found = self._native.numerics_report(step_index)
            if found is not None:
                numerics = NumericsReport(
                    found["stage"], found["op"], found["module"], found["file"], found["line"],
                    found["value"], found["input_magnitude"], step_index,
                    found["argument"] or "", found["describe"],
                    found["calibrated"] if found["calibrated"] >= 0 else None)
                if self._check_numerics == "raise":
                    raise NumericsError(numerics)
        return StepResult(loss, bool(skipped), scale, source, numerics)

    def _state_names(self) -> List[Tuple[str, int, str]]:
        """(key, argument index, element type) of everything a step keeps
        between calls: the model's parameters and buffers under the model's
        names, the rest (f32 masters, optimizer state, loss scaler) under
        ``amp.<role>.<k>``."""
        model_names = {i: a.name for i, a in enumerate(self._imported.arguments)
                       if a.kind in ("param", "frozen", "state", "counter")}
        return [(model_names.get(index, "amp." + role_name), index, self._arguments[index][1])
                for role_name, index in self._native.persistent]

    def state_dict(self) -> Dict[str, torch.Tensor]:
        """The step's whole state, as new tensors: parameters and buffers
        (by the model's names, in the step's precision), f32 masters,
        optimizer moments and step count, the loss scaler's scale and growth
        tracker (``amp.*``), and the number of calls (``amp.calls``).
        ``load_state_dict`` of it into a step compiled the same way resumes
        bit-identically; ``torch.save`` stores it."""
        state = {key: _from_numpy(self._native.get(index), element).clone()
                 for key, index, element in self._state_names()}
        state["amp.calls"] = torch.tensor(self._calls, dtype=torch.int64)
        return state

    def load_state_dict(self, state_dict: Dict[str, torch.Tensor]) -> None:
        """Restores a ``state_dict`` of a step compiled from the same model,
        optimizer and options. Every key must be there with its shape;
        nothing is changed if one is missing, unexpected or of another shape
        (a ``RuntimeError`` lists them, as ``Module.load_state_dict``)."""
        names = self._state_names()
        expected = {key for key, _, _ in names} | {"amp.calls"}
        missing = sorted(expected - set(state_dict))
        unexpected = sorted(set(state_dict) - expected)
        wrong = [f"{key}: expected {list(self._arguments[index][0])}, given "
                 f"{list(state_dict[key].shape)}"
                 for key, index, _ in names if key in state_dict and
                 tuple(state_dict[key].shape) != tuple(self._arguments[index][0])]
        if missing or unexpected or wrong:
            raise RuntimeError("Error(s) in loading state_dict for amp.Step: "
                               f"missing keys {missing}, unexpected keys {unexpected}, "
                               f"shape mismatches {wrong}")
        for key, index, element in names:
            self._native.set(index, _to_numpy(state_dict[key], element))
        self._native.broadcast_state()
        self._calls = int(state_dict["amp.calls"])
        self._sync_counters()

    def _sync_counters(self) -> None:
        """The model's num_batches_tracked (trained in place): its count when
        compiled or loaded plus the calls since."""
        with torch.no_grad():
            for name, tensor in self._live_counters.items():
                tensor.fill_(self._counted_from[name] + self._calls)

    def predict(self, *inputs: torch.Tensor) -> Any:
        """The model's output on ``inputs`` in eval mode (batch norm on its
        running statistics, dropout off), computed by the compiled forward
        with the step's current parameters at the compiled precision, as the
        model returns it: a tensor, or the same tuple, dict or ModelOutput
        with new f32 tensors in it (a tensor output that is not float, such
        as a boolean mask, is None). ``inputs`` are the model's inputs, of a
        batch shape a call has compiled; with ``loss_fn=None`` the target
        too (the model computes its loss from it: ``predict`` gives its
        eval-mode output, the loss included)."""
        count = self._data if self._imported.own_loss else self._data - 1
        if len(inputs) != count:
            what = "input(s) and the target (loss_fn=None)" if self._imported.own_loss \
                else "input(s)"
            raise ValueError(f"predict takes the model's {count} {what}, given "
                             f"{len(inputs)} tensors")
        if self._low_copies:
            self._follow_model_writes()
        # inputs of another batch size that a call has compiled for (the last
        # batch of an epoch, or the first): that step
        shapes = tuple(tuple(getattr(t, "shape", ())) for t in inputs)
        if shapes != self._batch_shapes[:count]:
            for variant in self._variants:
                if variant[:count] == shapes:
                    self._switch(variant)
                    break
        tensors = [self._batch_tensor(i, self._names[i], t) for i, t in enumerate(inputs)]
        self._check_integers(inputs)
        for i, tensor in enumerate(tensors):
            self._native.set(i, _to_numpy(tensor, self._arguments[i][1]))
        results = self._native.logits()
        # bf16 arrives as its uint16 bits; other types as themselves.
        tensors = [_from_numpy(r, "bf16" if r.dtype == np.uint16 else "").float()
                   for r in results]
        imported = self._imported
        if imported.output_spec is None:  # a model without marked outputs
            return tensors[0]
        leaves = [tensors[leaf] if isinstance(leaf, int) else
                  (leaf[1] if leaf[0] == "value" else None) for leaf in imported.output_leaves]
        return torch.utils._pytree.tree_unflatten(leaves, imported.output_spec)

    def copy_to(self, model: torch.nn.Module) -> None:
        """Writes the f32 master parameters and the buffers into ``model``'s
        own tensors (those the step trains in place hold them already), and
        batch norm's ``num_batches_tracked``."""
        masters = self._masters()
        tensors = self._model_tensors(model)
        with torch.no_grad():
            for index, argument in enumerate(self._imported.arguments):
                if argument.kind not in ("param", "frozen", "state"):
                    continue
                source = masters.get(index, index)  # the f32 master, if any
                element = "f32" if source != index else self._arguments[index][1]
                value = _from_numpy(self._native.get(source), element)
                target = tensors[argument.name]
                target.copy_(value.to(target.dtype))
            for name in self._imported.counters:
                tensors[name].fill_(self._counted_from[name] + self._calls)


def to_mlir(model: torch.nn.Module, loss_fn: Optional[Callable],
            example_inputs: Tuple[torch.Tensor, ...]) -> str:
    """The train-dialect module of ``loss_fn(model(*inputs), target)``
    (``loss_fn=None``: the loss ``model(*inputs, target)`` computes).

    The text amp-opt, amp-run and amp-compile take. Raises
    UnsupportedModelError listing every node amp cannot import. The
    parameters' values stay in PyTorch: they are written as
    ``#train.init<zeros>``, and amp-run refuses to train such a network
    without ``--init-from=FILE`` (``safetensors.torch.save_file(
    model.state_dict(), FILE)``).
    """
    return _importer.import_model(model, loss_fn, example_inputs).text


@contextlib.contextmanager
def _module_file(text: str, prefix: str) -> Iterator[Tuple[str, str]]:
    """``text`` written to ``model.mlir`` in a new temporary directory, for a
    tool to read: (the directory, the file's path); both go afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        source = os.path.join(directory, "model.mlir")
        with open(source, "w") as f:
            f.write(text)
        yield directory, source


def _build_native(text: str, flags: List[str], backend: str, dp_timeout: float,
                  cache: bool = True, name: str = "") -> Tuple[Any, bool]:
    """amp-compile of ``text`` with ``flags``, loaded in this process (the
    extension's NativeStep), joined to the data-parallel job if any; and
    whether the compile cache held it (``cache=False``: not consulted)."""
    # The artifact is loaded (dlopen'ed) before its directory goes: nothing
    # is left on disk, whatever happens after.
    with _module_file(text, "amp-step-") as (directory, source):
        artifact = os.path.join(directory, "step.so")
        diagnostics = os.path.join(directory, "diagnostics.jsonl")
        environment = None if cache else dict(os.environ, AMP_CACHE="0")
        # On a terminal, each phase of a long compile is shown as it ends.
        progress = sys.stderr.isatty()
        process = subprocess.Popen(
            [_amp_compile(), source, "-o", artifact,
             f"--diagnostics-file={diagnostics}"] + flags +
            ([f"--model-name={name}"] if name else []) +
            (["--time-phases"] if progress else []),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment)
        lines = []
        for line in process.stderr:
            line = line.rstrip("\n")
            if progress and _PHASE.match(line):
                print("amp.compile: " + line[len("amp-compile: "):], file=sys.stderr,
                      flush=True)
            else:
                lines.append(line)
        process.wait()
        stderr = "\n".join(lines)
        if process.returncode != 0:
            raise CompileError(stderr.strip() or f"amp-compile exited {process.returncode}",
                               _read_diagnostics(diagnostics, source))
        hit = False
        for line in lines:
            if line.startswith("amp-compile: cache hit"):
                hit = True
                _LOG.info("amp.compile: %s", line.split(": ", 1)[1])
            elif line.startswith("warning: "):  # the cache's (damaged, unusable)
                warnings.warn(f"amp.compile: {line[len('warning: '):]}", RuntimeWarning,
                              stacklevel=3)
        from . import _native  # the extension: imported once it is needed
        try:
            native = _native.NativeStep(artifact)
        except RuntimeError as error:
            if backend != "cuda":
                raise
            reason = str(error).split(": ", 1)[-1]  # without the temporary path
            raise DeviceUnavailableError(
                f"backend='cuda': the step compiled, but {reason} (use backend='cpu' "
                "on a machine without an NVIDIA GPU)") from None
        # A data-parallel step: the job's communicator in its runtime (on
        # the GPU, NCCL starts over it, within the timeout).
        native.set_timeout(float(dp_timeout))
        native.join_job()
    return native, hit


def compile(model: torch.nn.Module, loss_fn: Optional[Callable],
            example_inputs: Tuple[torch.Tensor, ...], *,
            optimizer: torch.optim.Optimizer, opt_level: str = "O1",
            dtype: torch.dtype = torch.float16, backend: str = "cpu",
            init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
            backoff_factor: float = 0.5, growth_interval: int = 2000,
            enabled: bool = True, accumulate: int = 1,
            clip_grad_norm: Optional[float] = None,
            loss_scale: Union[str, float, None] = None,
            data_parallel: bool = False, sync_batchnorm: bool = False,
            dp_timeout: float = 300.0, cache: bool = True,
            attention: str = "fused", memory_budget: Optional[float] = None,
            recompute_gemms: bool = False, lm_head: str = "fused",
            check_numerics: Union[bool, str] = False, autocast: str = "default",
            calibration: Optional["Calibration"] = None,
            train_in_place: bool = True,
            _smallest_magnitudes: bool = False) -> Step:
    """Compiles the mixed-precision training step of ``model`` and ``loss_fn``.

    ``example_inputs`` = (inputs..., target), a tuple or a list (as a
    DataLoader yields it): ``loss_fn(model(*inputs), target)`` is the loss,
    any scalar the user writes (several loss terms, a penalty);
    ``loss_fn=None``: the model computes its own, ``model(*inputs, target)``
    returns it (a scalar tensor, an output with ``.loss`` such as
    HuggingFace's, or a tuple led by it);
    their shapes and types are the step's (a batch that differs only in its
    leading dimension, such as a DataLoader's smaller last batch, compiles
    once more and shares the state). ``optimizer`` is a
    ``torch.optim.SGD``, ``Adam`` or ``AdamW`` over the model's parameters;
    its learning rate is read at every call. ``opt_level`` is Apex's O0-O3,
    ``dtype`` torch.float16 or torch.bfloat16; ``init_scale``,
    ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
    ``enabled`` are torch.amp.GradScaler's. ``accumulate=N`` makes every
    call a micro-batch and updates once per N calls with the mean of their
    gradients (the AMP tutorials' loop with ``loss / N``);
    ``clip_grad_norm=C`` clips the (unscaled) gradients to global 2-norm C
    before each update, as ``scaler.unscale_`` + ``clip_grad_norm_``.
    ``loss_scale`` is Apex's: "dynamic" (GradScaler's rules, from
    ``init_scale``) or a number, a fixed scale (a step with inf/NaN
    gradients is still skipped; the scale never changes); None (the
    default) is Apex's default for the opt level: a static 1.0 at O3 with
    float16 (whose loss cannot hold a larger dynamic scale), "dynamic"
    otherwise. Compiling does not run, change or move the model.

    ``train_in_place=True`` (the default): the step trains the model's own
    f32 parameters and buffers, as a PyTorch optimizer does. On the CPU
    backend it reads and updates them in their memory (the f32 masters at
    O2), so the model holds the trained values after every call (evaluate
    or save it directly) and the process keeps one copy of them, not two.
    A tensor the step keeps in another type (O3's low-precision
    parameters) or on the GPU (``backend="cuda"``) is a copy of the step's
    own, written back by ``Step.copy_to``; so is every tensor with
    ``train_in_place=False``, which leaves the model's values as they are
    until ``copy_to`` (two steps compiled from one model then each start
    from its values and train apart). A tensor replaced in the model
    afterwards (``model.half()``, ``p.data = ...``) is no longer the
    step's: the step goes on with the memory it was given. With
    ``data_parallel=True`` every rank's model takes rank 0's values when
    the step is made, as DistributedDataParallel's broadcast.

    ``data_parallel=True`` makes the step one rank of an mpirun job
    (``mpirun -np N python train.py``), as DistributedDataParallel: the step
    is compiled for the job's N processes, every rank starts from rank 0's
    parameters and state, each call's gradients are averaged across the
    ranks inside the step, and every rank applies the same update. Each rank
    passes its own shard of the global batch (:func:`get_rank`,
    :func:`get_world_size`). ``sync_batchnorm=True`` (with
    ``data_parallel``) normalizes batch norm with the global batch's
    statistics, as ``torch.nn.SyncBatchNorm``. ``dp_timeout`` (seconds, 0:
    none; amp-run's ``--dp-timeout``): a call whose collectives wait longer
    ends the job with an error naming the ranks they wait for.
    docs/Distributed.md.

    ``cache``: the compiled step is kept in the compile cache
    (``$AMP_CACHE_DIR``, default ``~/.cache/amp/steps``; ``AMP_CACHE=0``
    turns it off everywhere) and a model compiled before with the same
    options is taken from it instead of compiled again (``Step.cache_hit``
    says which; ``python -m amp.cache list`` shows the cache).
    ``cache=False`` neither reads nor writes it.

    ``attention``: how ``F.scaled_dot_product_attention`` (without dropout)
    runs on the CPU: "fused" (the runtime's flash-style kernels: no
    [seq, seq] scores kept for the backward pass) or "decomposed" (batch
    matmul, softmax, batch matmul, as PyTorch's math backend; for
    comparison). The CUDA backend decomposes it either way.
    ``memory_budget=f`` (0 < f <= 1; CPU): element-wise values of the
    forward (activations, casts, norms' outputs) are recomputed in the
    backward pass instead of kept, where their inputs are kept anyway,
    until the step's estimated peak of live tensors is at most f times the
    peak without (or nothing is left to recompute): memory for time, with
    the same bits (``Step.memory_plan`` gives the resulting arena). Values
    are recomputed with what made them where that is cheap work too (a
    layer norm's output from its input: the statistics again).
    ``recompute_gemms=True`` lets the budget recompute GEMMs as well (a
    value kept only because the GEMM that made it is not run again: an MLP's
    first GEMM, the query/key/value projection), after every value that
    needs none: less memory again, for the GEMMs' time.

    ``lm_head``: how a bias-free last linear layer whose logits only
    ``cross_entropy`` reads (a language model's head, tied or not) runs on
    the CPU: "fused" (one op with its loss: the logits computed a block of
    rows at a time, forward and again for the gradients, never whole) or
    "decomposed" (the [rows, vocabulary] logits and their gradient kept as
    tensors; for comparison). The CUDA backend decomposes it either way.

    ``check_numerics=True`` compiles a step that measures every value it
    makes (forward and backward) and says where its first inf or NaN was
    born: ``StepResult.numerics``, a :class:`NumericsReport` naming the op,
    its module path and source line, forward or backward, and the largest
    magnitude of its inputs (None while every value is finite).
    ``check_numerics="raise"`` raises :class:`NumericsError` instead. The
    losses and updates are those of the step without the option, bit for
    bit; it costs step time (docs/Numerics.md gives the figures).

    ``autocast="calibrated"`` with ``calibration=amp.calibrate(...)`` (or
    ``amp.Calibration.load(path)``) also keeps in f32 every op whose
    measured range, times a margin of 2, does not fit ``dtype`` (a ``lower``
    op by its inputs too): the decision ``fp32/calibrated``, which
    ``amp.explain`` shows with the magnitude. A calibration of another
    model is a :class:`CompileError` naming the op it does not find.
    """
    dtype_name = _check_precision(opt_level, dtype)
    if lm_head not in ("fused", "decomposed"):
        raise ValueError(f"lm_head must be 'fused' or 'decomposed', given {lm_head!r}")
    if attention not in ("fused", "decomposed"):
        raise ValueError(f"attention must be 'fused' or 'decomposed', given {attention!r}")
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"backend must be 'cpu' or 'cuda', given {backend!r}")
    if autocast not in ("default", "calibrated"):
        raise ValueError(f"autocast must be 'default' or 'calibrated', given {autocast!r}")
    if autocast == "calibrated" and calibration is None:
        raise ValueError("autocast='calibrated' needs calibration=amp.calibrate(model, "
                         "loss_fn, batches) (or amp.Calibration.load(path))")
    if calibration is not None and autocast != "calibrated":
        raise ValueError("calibration= is used with autocast='calibrated'")
    if not (check_numerics is True or check_numerics is False or check_numerics == "raise"):
        raise ValueError("check_numerics must be False, True or 'raise', "
                         f"given {check_numerics!r}")
    if memory_budget is not None and (
            isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, float))
            or not 0 < memory_budget <= 1):
        raise ValueError("memory_budget must be a fraction in (0, 1] (or None), "
                         f"given {memory_budget!r}")
    if memory_budget is not None and memory_budget < 1 and backend != "cpu":
        raise ValueError("memory_budget is the CPU backend's (backend='cpu')")
    if not isinstance(train_in_place, bool):
        raise TypeError(f"train_in_place must be a bool, given {train_in_place!r}")
    if not isinstance(recompute_gemms, bool):
        raise TypeError(f"recompute_gemms must be a bool, given {recompute_gemms!r}")
    if recompute_gemms and (memory_budget is None or memory_budget == 1):
        raise ValueError("recompute_gemms=True needs a memory_budget below 1")
    if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
        raise ValueError(f"accumulate must be a positive int, given {accumulate!r}")
    if clip_grad_norm is not None and not clip_grad_norm > 0:
        raise ValueError(f"clip_grad_norm must be positive (or None), given {clip_grad_norm!r}")
    if sync_batchnorm and not data_parallel:
        raise ValueError("sync_batchnorm=True needs data_parallel=True")
    if isinstance(dp_timeout, bool) or not isinstance(dp_timeout, (int, float)) or \
            not 0 <= dp_timeout < float("inf"):
        raise ValueError(f"dp_timeout must be 0 (none) or a number of seconds, given {dp_timeout!r}")
    static_scale = None
    if loss_scale is None:
        # Apex's defaults: O3 computes the loss in float16, which holds no
        # scale above 65504, and starts from a static 1.0; the others scale
        # dynamically (a bfloat16 step needs no scale: amp-compile's auto).
        loss_scale = 1.0 if opt_level == "O3" and dtype_name == "f16" else "dynamic"
    elif loss_scale == "dynamic" and opt_level == "O3" and dtype_name == "f16" and enabled:
        raise ValueError("opt_level='O3' computes the loss in float16, which cannot hold a "
                         "dynamic loss scale (up to 2**24): pass loss_scale=1.0 (Apex's O3 "
                         "default) or another static scale of at most 65504")
    if loss_scale != "dynamic":
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)) or \
                not 0 < loss_scale < float("inf"):
            raise ValueError("loss_scale must be 'dynamic' or a positive finite number, "
                             f"given {loss_scale!r}")
        static_scale = float(loss_scale)
    optimizer_flags, training = _optimizer_flags(optimizer, model)
    imported = _importer.import_model(model, loss_fn, example_inputs, training)
    flags = [f"--backend={backend}", f"--opt-level={opt_level}",
             f"--dtype={dtype_name}"] + optimizer_flags
    # A fixed loss_scale replaces GradScaler's init_scale.
    start = static_scale if static_scale is not None else init_scale
    flags += [f"--init-scale={start!r}", f"--growth-factor={growth_factor!r}",
              f"--backoff-factor={backoff_factor!r}", f"--growth-interval={growth_interval}"]
    if not enabled:
        flags.append("--loss-scale=none")
        static_scale = None
    elif static_scale is not None:
        flags.append("--loss-scale=static")
    flags.append(f"--accumulate={accumulate}")
    if clip_grad_norm is not None:
        flags.append(f"--clip-norm={float(clip_grad_norm)!r}")
    if attention != "fused":
        flags.append(f"--attention={attention}")
    if lm_head != "fused":
        flags.append(f"--lm-head={lm_head}")
    if memory_budget is not None and memory_budget < 1:
        flags.append(f"--memory-budget={float(memory_budget)!r}")
    if recompute_gemms:
        flags.append("--recompute-gemms")
    if check_numerics:
        flags.append("--check-numerics")
        if _smallest_magnitudes:  # amp.calibrate's underflow headroom
            flags.append("--smallest-magnitudes")
    if calibration is not None:
        flags += ["--autocast=calibrated", f"--calibration={calibration._file()}"]
    if data_parallel:
        from . import _native
        try:
            _, ranks = _native.join_mpi_job()
        except RuntimeError as error:
            raise RuntimeError(f"data_parallel=True: {error}") from None
        _abort_job_on_uncaught_exception()
        if ranks > 1:
            flags.append(f"--ranks={ranks}")
            if sync_batchnorm:
                flags.append("--sync-batchnorm")
    # The artifact names the model by its class (not the temporary file the
    # module is written to): the same model hits the cache in every process.
    name = f"{type(model).__module__}.{type(model).__qualname__}"
    native, hit = _build_native(imported.text, flags, backend, dp_timeout, cache, name)

    def rebuild(example: Tuple[torch.Tensor, ...]) -> Tuple[Any, _importer.ImportedModel]:
        again = _importer.import_model(model, loss_fn, example, training)
        return _build_native(again.text, flags, backend, dp_timeout, cache, name)[0], again

    # Data parallel: every rank would have to compile and join for the same
    # shape at the same call; a DistributedSampler's shards are one size
    # (drop_last), so another shape stays a ValueError there.
    step = Step(native, imported, model, optimizer, static_scale,
                None if data_parallel else rebuild, hit, train_in_place)
    step._check_numerics = check_numerics
    # The set-up's transient (initial values the model's replaced) goes
    # back to the kernel: the runtime keeps freed blocks for the steps.
    from . import _native
    _native.release_freed_memory()
    return step
