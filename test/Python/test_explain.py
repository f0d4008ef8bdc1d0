"""amp.explain: every node, the train ops it maps to and their precision;
every node that blocks compilation, with the reason."""

import inspect

import torch
import torch.nn as nn

import amp
from models import Net, batches, mlp
from test_errors import WithLSTM


def test_every_node_with_its_train_ops_precision_and_line():
    model = Net(bias=True)
    call_line = inspect.currentframe().f_lineno + 1
    report = amp.explain(model, nn.CrossEntropyLoss(), batches(1)[0])
    assert report.compiles and not report.blocking
    ops = {n.op: n for n in report.nodes}
    conv = ops["aten.conv2d.default"]
    assert conv.module == "conv" and conv.file.endswith("models.py")
    source = inspect.getsource(Net.forward).splitlines()
    start = Net.forward.__code__.co_firstlineno
    assert "self.conv(x)" in source[conv.line - start]
    assert [(t.op, t.precision) for t in conv.train_ops] == [("train.conv2d", "f16")]
    assert "lower" in conv.train_ops[0].reason
    assert [(t.op, t.precision) for t in ops["aten.relu.default"].train_ops] == \
        [("train.relu", "f16")]
    loss = ops["aten.cross_entropy_loss.default"]
    assert loss.module == "loss_fn" and loss.train_ops[0].precision == "f32"
    # The loss lies wholly in torch's code: its location is the user's call.
    assert loss.file == __file__ and loss.line == call_line
    emitted = sum(len(n.train_ops) for n in report.nodes)
    assert sum(report.ops_by_precision.values()) == emitted
    assert 0.4 < report.activation_bytes["saved_fraction"] < 0.6
    text = str(report)
    assert "train.conv2d f16" in text and "models.py:" in text
    # The step's memory plan (the CPU lowering's, no code generated): the
    # convolution's f32 output [batch, 8, 28, 28] is one of its buffers.
    plan = report.memory_plan
    x = batches(1)[0][0]
    assert plan.arena_bytes >= plan.live_peak_bytes >= x.shape[0] * 8 * 28 * 28 * 4
    assert sum(plan.at_peak.values()) == plan.live_peak_bytes
    assert f"memory plan of the step: {plan}" in text


def test_o0_keeps_everything_f32_and_bf16_is_named():
    report = amp.explain(mlp(), nn.CrossEntropyLoss(), batches(1)[0], opt_level="O0")
    assert {t.precision for n in report.nodes for t in n.train_ops} == {"f32"}
    report = amp.explain(mlp(), nn.CrossEntropyLoss(), batches(1)[0], dtype=torch.bfloat16)
    assert "bf16" in {t.precision for n in report.nodes for t in n.train_ops}


def test_blocking_nodes_are_listed_not_raised():
    model = WithLSTM()
    report = amp.explain(model, nn.CrossEntropyLoss(), batches(1)[0])
    assert not report.compiles and report.memory_plan is None
    assert any(b.module == "rnn" and "lstm" in b.op for b in report.blocking)
    linear = next(n for n in report.nodes if n.op == "aten.linear.default")
    assert linear.train_ops[0].op == "train.matmul"
    assert "block compilation" in str(report)


def test_what_fails_after_import_blocks_too(monkeypatch):
    """amp.explain runs amp-pipeline and its checks (amp-compile
    --verify-only), not only the import: an imported module the pipeline
    rejects (here, made so by hand: every parameter turned into state) is
    reported as not compiling, with the pipeline's message."""
    real = amp._importer.import_model

    def parameters_as_state(*args, **kwargs):
        imported = real(*args, **kwargs)
        imported.text = imported.text.replace("train.param,", "train.state,")
        return imported

    monkeypatch.setattr(amp._importer, "import_model", parameters_as_state)
    report = amp.explain(mlp(), nn.CrossEntropyLoss(), batches(1)[0])
    assert not report.compiles
    assert [b.reason for b in report.blocking] == [
        "amp-optimizer: @forward has no train.param arguments: nothing to train"]
    assert "block compilation" in str(report)


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x.flatten(1))
        return -self.fc(x.flatten(1))


def test_control_flow_is_a_blocking_capture():
    report = amp.explain(Branchy(), nn.CrossEntropyLoss(), batches(1)[0])
    assert not report.compiles and report.blocking[0].op == "<capture>"
    assert report.blocking[0].file.endswith("test_explain.py")


def test_a_blocking_node_is_shown_as_blocking_and_the_rest_keep_precisions():
    """The table marks the unsupported node as blocking (with why), not as an
    identity, and still gives the other ops the precision their autocast
    category decides; the op counts leave out reshapes and constants."""
    report = amp.explain(WithLSTM(), nn.CrossEntropyLoss(), batches(1)[0])
    lstm = next(n for n in report.nodes if n.op == "aten.lstm.input")
    assert lstm.blocking and "no mapping" in lstm.blocking
    text = str(report)
    assert "(blocks compilation: no mapping to the train dialect)" in text
    linear = next(n for n in report.nodes if n.op == "aten.linear.default")
    matmul = next(t for t in linear.train_ops if t.op == "train.matmul")
    assert matmul.precision == "f16" and "lower list" in matmul.reason
    loss = next(n for n in report.nodes if n.op == "aten.cross_entropy_loss.default")
    assert loss.train_ops[0].precision == "f32"
    # A compiling model: compute ops apart from the reshapes and constants.
    report = amp.explain(mlp(), nn.CrossEntropyLoss(), batches(1)[0])
    compute = report.compute_ops_by_precision()
    reshapes = sum(1 for n in report.nodes for t in n.train_ops if t.op == "train.reshape")
    assert reshapes > 0
    assert sum(compute.values()) == sum(report.ops_by_precision.values()) - reshapes
    # The two matmuls and the relu in f16, the loss in f32.
    assert compute == {"f16": 3, "f32": 1}, compute
    assert "compute ops by precision: f16: 3, f32: 1" in str(report)
