"""What amp.compile refuses, and how."""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import batches, mlp


class WithLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(28, 16, batch_first=True)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        out, _ = self.rnn(x.view(x.shape[0], 28, 28))
        return self.fc(out[:, -1])


def test_unsupported_module_lists_every_node_with_path_and_line():
    model = WithLSTM()
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(amp.UnsupportedModelError) as info:
        amp.to_mlir(model, nn.CrossEntropyLoss(), batches(1)[0])
    nodes = info.value.nodes
    assert any(n.module == "rnn" and "lstm" in n.op for n in nodes), nodes
    lstm = next(n for n in nodes if n.module == "rnn")
    assert lstm.file.endswith("test_errors.py") and lstm.line > 0
    assert "test_errors.py" in str(info.value)
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name])


def test_embedding_scale_grad_by_freq_is_refused_not_ignored():
    model = nn.Sequential(nn.Embedding(16, 8, scale_grad_by_freq=True), nn.Flatten(),
                          nn.Linear(32, 10))
    example = (torch.randint(0, 16, (2, 4)), torch.zeros(2, dtype=torch.long))
    with pytest.raises(amp.UnsupportedModelError) as info:
        amp.to_mlir(model, nn.CrossEntropyLoss(), example)
    assert [n.module for n in info.value.nodes] == ["0"]
    assert "embedding" in info.value.nodes[0].op
    assert "scale_grad_by_freq" in info.value.nodes[0].reason


def test_wrong_batch_shape_is_a_value_error_naming_the_input():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches(1)[0],
                       optimizer=opt, opt_level="O0")
    x, y = batches(1)[0]
    with pytest.raises(ValueError, match=r"input: expected shape \[16, 1, 28, 28\], given "
                                         r"\[16, 1, 28, 27\]"):
        step(x[..., :27], y)
    # another batch size of every tensor is compiled once more
    # (test_batches.py); inputs and a target that do not agree are an error
    x, _ = batches(1, batch=8)[0]
    with pytest.raises(ValueError, match=r"input: expected shape \[16, 1, 28, 28\], given "
                                         r"\[8, 1, 28, 28\]"):
        step(x, y)


def test_locations_are_the_users_module_and_line():
    text = amp.to_mlir(mlp(), nn.CrossEntropyLoss(), batches(1)[0])
    assert 'train.matmul' in text
    assert 'loc("1"(' in text and 'loc("3"(' in text  # Sequential's children


def test_bad_options_raise():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="opt_level"):
        amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], optimizer=opt, opt_level="O4")
    with pytest.raises(ValueError, match="dtype"):
        amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], optimizer=opt,
                    dtype=torch.float64)
    with pytest.raises(ValueError, match="optimizer"):
        amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0],
                    optimizer=torch.optim.RMSprop(model.parameters()))


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        x = x.flatten(1)
        if x.sum() > 0:  # BRANCH: Python control flow on a tensor's value
            x = x * 2
        return self.fc(x)


def test_control_flow_on_a_tensor_names_the_users_line():
    import inspect
    source, first = inspect.getsourcelines(Branchy.forward)
    branch = first + next(i for i, text in enumerate(source) if "BRANCH" in text)
    model = Branchy()
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(amp.UnsupportedModelError) as info:
        amp.to_mlir(model, nn.CrossEntropyLoss(), batches(1)[0])
    (node,) = info.value.nodes
    assert node.file.endswith("test_errors.py") and node.line == branch, node
    assert "depends on tensor values" in node.reason
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name])


def test_batches_in_any_layout_give_the_same_step():
    """Contiguous CPU tensors of the compiled type are read in place; the
    others (non-contiguous, not 64-byte aligned, float64, int32 labels)
    are converted: every form gives bit-identical steps."""
    torch.manual_seed(0)
    model = mlp()
    (x, y), = batches(1)
    x64 = x.double()
    strided = x.permute(3, 2, 1, 0).contiguous().permute(3, 2, 1, 0)
    assert not strided.is_contiguous()
    unaligned = torch.empty(x.numel() + 1)[1:].view(x.shape)
    unaligned.copy_(x)
    assert unaligned.data_ptr() % 64 != 0
    forms = [(x, y), (strided, y), (unaligned, y), (x64, y), (x, y.int()),
             (x.requires_grad_(False).clone().requires_grad_(True), y)]
    results = []
    for form in forms:
        # each from the initial weights (the step trains its model in place)
        twin = copy.deepcopy(model)
        opt = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
        step = amp.compile(twin, nn.CrossEntropyLoss(), example_inputs=(x, y),
                           optimizer=opt, opt_level="O0")
        results.append([step(*form).loss for _ in range(3)])
    assert all(r == results[0] for r in results), results


def test_cuda_backend_runs_or_says_why_not():
    """backend="cuda" compiles the CUDA artifact; without a GPU the step
    cannot load and says so with a typed error; with one it trains like the
    CPU step (O1 f16: losses within 1e-2)."""
    torch.manual_seed(0)
    model = mlp()
    data = batches(3)
    make = lambda m: torch.optim.SGD(m.parameters(), lr=0.1)
    try:
        step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                           optimizer=make(model), backend="cuda")
    except amp.DeviceUnavailableError as error:
        assert "backend='cuda'" in str(error) and "CUDA" in str(error)
        assert "amp-step-" not in str(error)  # no temporary path
        return
    twin = copy.deepcopy(model)
    reference = amp.compile(twin, nn.CrossEntropyLoss(), example_inputs=data[0],
                            optimizer=make(twin), backend="cpu")
    for x, y in data:
        assert abs(step(x, y).loss - reference(x, y).loss) <= 1e-2


@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), "static", True])
def test_bad_loss_scale_is_a_value_error(value):
    model = mlp()
    with pytest.raises(ValueError, match="loss_scale must be 'dynamic' or a positive finite"):
        amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches(1)[0],
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss_scale=value)


class Tokens(nn.Module):
    """Token ids [8, 6] of a 20-row embedding -> 5 classes."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.head = nn.Linear(8, 5)

    def forward(self, ids):
        return self.head(self.embed(ids).mean(dim=1))


@pytest.mark.parametrize("precision", ["O0", "O1-bf16", "O1-f16"])
def test_out_of_range_ids_and_labels_are_index_errors_and_change_nothing(precision):
    """As PyTorch's embedding and cross entropy raise IndexError (amp's
    kernels would clamp a token id and make a NaN loss of a label): checked
    before the step runs, so its state is exactly as before."""
    torch.manual_seed(0)
    model = Tokens()
    level, _, dtype = precision.partition("-")
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(
        torch.zeros(8, 6, dtype=torch.long), torch.zeros(8, dtype=torch.long)),
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), opt_level=level,
        dtype=torch.float16 if dtype == "f16" else torch.bfloat16)
    ids, labels = torch.randint(0, 20, (8, 6)), torch.randint(0, 5, (8,))
    step(ids, labels)
    before = step.state_dict()
    bad_ids = ids.clone()
    bad_ids[3, 2] = 20
    with pytest.raises(IndexError, match=r"input: value 20 out of range for embedding "
                                         r"\(20 rows\) of 'embed'.*valid are 0..19"):
        step(bad_ids, labels)
    with pytest.raises(IndexError, match="embed"):
        step.predict(bad_ids)
    bad_labels = labels.clone()
    bad_labels[0] = 5
    with pytest.raises(IndexError, match=r"target: value 5 out of range for cross_entropy's "
                                         r"target \(5 classes\).*and -100"):
        step(ids, bad_labels)
    bad_labels[0] = -1
    with pytest.raises(IndexError, match="value -1"):
        step(ids, bad_labels)
    huge = ids.clone()
    huge[0, 0] = 2**40
    with pytest.raises(ValueError, match="does not fit the step's integer type"):
        step(huge, labels)
    after = step.state_dict()
    for key in before:  # the failed calls changed nothing
        assert torch.equal(before[key], after[key]), key
    bad_labels[0] = -100  # ignore_index: a valid target
    result = step(ids, bad_labels)
    assert result.loss == result.loss and int(step.state_dict()["amp.calls"]) == 2


class InPlaceOnAConstant(nn.Module):
    """A tensor made from shapes, read, then changed in place, then read
    again: one constant cannot be both values."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        p = torch.arange(4.0)
        y = self.fc(x) + p
        p.add_(10)
        return y + p


class CountsCalls(nn.Module):
    """A buffer written through a view inside forward (``c[0] += 1``)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("c", torch.zeros(4))

    def forward(self, x):
        self.c[0] += 1
        return self.fc(x) + self.c


@pytest.mark.parametrize("model", [InPlaceOnAConstant, CountsCalls])
def test_in_place_updates_of_folded_tensors_are_refused_not_folded(model):
    """Folding at import must not give one value to a tensor the model
    changes in place (nor take a buffer written through a view for
    unchanging): such models are refused, naming the node."""
    with pytest.raises(amp.UnsupportedModelError):
        amp.to_mlir(model(), nn.MSELoss(), (torch.randn(2, 4), torch.randn(2, 4)))


class TwoColumns(nn.Module):
    """Two embeddings of different sizes on two columns of one input."""

    def __init__(self):
        super().__init__()
        self.a = nn.Embedding(5, 4)
        self.b = nn.Embedding(100, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return self.head(self.a(x[:, 0]) + self.b(x[:, 1]))


def test_range_checks_do_not_mix_up_slices_of_one_input():
    """Index checks hold the part of the input that reaches each index op:
    an id valid for its own column's embedding is not checked against the
    other's size, and each column is checked against its own."""
    torch.manual_seed(0)
    model = TwoColumns()
    x, y = torch.tensor([[1, 50], [4, 99]]), torch.tensor([0, 2])
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O0")
    assert step(x, y).loss > 0
    with pytest.raises(IndexError, match=r"value 7 out of range for embedding \(5 rows\) of 'a'"):
        step(torch.tensor([[1, 50], [7, 3]]), y)
    with pytest.raises(IndexError, match=r"value 100 out of range for embedding \(100 rows\) of 'b'"):
        step(torch.tensor([[1, 100], [4, 3]]), y)


class MaskedScores(nn.Module):
    """Attention scores masked by a padding mask with a large finite fill."""

    def __init__(self, fill: float):
        super().__init__()
        self.qk = nn.Linear(8, 16)
        self.head = nn.Linear(8, 3)
        self.fill = fill

    def forward(self, x, padding):
        q, k = self.qk(x).chunk(2, dim=-1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(padding[:, None, :], self.fill)
        return self.head((torch.softmax(scores, dim=-1) @ x).mean(dim=1))


@pytest.mark.parametrize("fill", [-1e9, torch.finfo(torch.float32).min], ids=["-1e9", "min"])
@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_masked_fill_with_a_large_negative_fill_gives_no_nan(level, fill):
    """The fill is beyond f16's range (it rounds to -inf there, as in
    PyTorch's f16 masked_fill): train.select chooses it without arithmetic,
    so no -inf * 0 makes a NaN at O2 / O3 (the arithmetic form did, at every
    step); the first loss within 2% of PyTorch's f32 one."""
    torch.manual_seed(0)
    model = MaskedScores(fill)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 6, 8, generator=g)
    padding = torch.zeros(4, 6, dtype=torch.bool)
    padding[:, 4:] = True
    y = torch.randint(0, 3, (4,), generator=g)
    with torch.no_grad():
        want = nn.functional.cross_entropy(model(x, padding), y).item()
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, padding, y),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
                       opt_level=level, dtype=torch.float16,
                       loss_scale=1.0 if level == "O3" else "dynamic")  # Apex's O3
    assert "train.select" in step.mlir
    results = [step(x, padding, y) for _ in range(3)]
    assert all(r.loss == r.loss and abs(r.loss) < float("inf") for r in results)
    assert abs(results[0].loss - want) <= 0.02 * want
    assert not any(r.skipped for r in results[1:])


class OwnLoss(nn.Module):
    """A model that computes its own loss (loss_fn=None), in a submodule."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x, target):
        return self.criterion(self.fc(x.flatten(1)), target)  # LOSS


def test_compile_error_diagnostics_name_the_users_module_and_line():
    """A model that fails in a pass (a static loss scale above float16's
    largest value, with the loss computed in float16 at O3): the CompileError
    carries the pass's diagnostic as a record at the user's module path and
    source line, and str() stays the readable text."""
    import inspect
    source, first = inspect.getsourcelines(OwnLoss.forward)
    line = first + next(i for i, text in enumerate(source) if "# LOSS" in text)
    model = OwnLoss()
    before = copy.deepcopy(model.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(amp.CompileError) as info:
        amp.compile(model, None, batches(1)[0], optimizer=opt, opt_level="O3",
                    loss_scale=131072.0)
    errors = [d for d in info.value.diagnostics if d.severity == "error"]
    assert len(errors) == 1, info.value.diagnostics
    error = errors[0]
    assert isinstance(error, amp.Diagnostic)
    assert error.module == "criterion"
    assert error.file.endswith("test_errors.py") and error.line == line, error
    assert not error.backward
    assert "amp-loss-scaling: the loss is computed in 'f16'" in error.message
    assert "131072" in error.message
    # The text names the same place; the record's str() too.
    assert f"test_errors.py:{line}:" in str(info.value)
    assert str(error).startswith(f"{error.file}:{line}: criterion: error: amp-loss-scaling")
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name])


def test_a_failure_that_is_no_diagnostic_has_no_records(monkeypatch, tmp_path):
    """amp-compile that cannot start: a CompileError whose diagnostics are
    empty, not a crash."""
    missing = tmp_path / "amp-compile"
    monkeypatch.setenv("AMP_COMPILE", str(missing))
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(amp.CompileError) as info:
        amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], optimizer=opt)
    assert info.value.diagnostics == []
    assert f"AMP_COMPILE={missing} is not an executable amp-compile" in str(info.value)


def test_o0_accepts_float32_and_o3_defaults_to_apex_static_scale():
    """dtype=torch.float32 is what a user writes for O0 (all f32 anyway);
    O3's default loss scale is Apex's static 1.0, and asking for a dynamic
    one at O3 names the loss_scale= keyword."""
    x, y = batches(1)[0]
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    twin = copy.deepcopy(model)
    reference = amp.compile(twin, nn.CrossEntropyLoss(), (x, y),
                            optimizer=torch.optim.SGD(twin.parameters(), lr=0.1),
                            opt_level="O0")
    step = amp.compile(model, nn.CrossEntropyLoss(), (x, y), optimizer=opt, opt_level="O0",
                       dtype=torch.float32)
    assert step(x, y).loss == reference(x, y).loss
    with pytest.raises(ValueError, match="torch.float32 at opt_level='O0'"):
        amp.compile(model, nn.CrossEntropyLoss(), (x, y), optimizer=opt, opt_level="O1",
                    dtype=torch.float32)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    o3 = amp.compile(model, nn.CrossEntropyLoss(), (x, y), optimizer=opt, opt_level="O3")
    result = o3(x, y)
    assert result.scale == 1.0 and torch.isfinite(torch.tensor(result.loss))
    with pytest.raises(ValueError, match=r"loss_scale=1\.0"):
        amp.compile(model, nn.CrossEntropyLoss(), (x, y), optimizer=opt, opt_level="O3",
                    loss_scale="dynamic")
