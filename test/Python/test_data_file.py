"""amp-run and amp-train train a model of two inputs (an image and a feature
vector) from a safetensors data file (--dataset=safetensors: one tensor per
model input, named as the forward's parameters, and `labels`; the tail held
out), to the accuracy amp.compile reaches on the same data in Python."""

import copy
import json
import os
import subprocess

import pytest
import torch
import torch.nn as nn
from safetensors.torch import save_file

import amp

BATCH, EXAMPLES, EPOCHS, LR = 32, 640, 8, 0.05


class ImageAndFeatures(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 8 + 5, 3)

    def forward(self, image: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.cat([torch.relu(self.conv(image)).flatten(1), features], 1))


def tool(name: str) -> str:
    return os.path.join(os.path.dirname(amp._api._amp_compile()), name)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The model's initial weights, the data (a teacher over both inputs),
    and the files the command line reads."""
    directory = tmp_path_factory.mktemp("data-file")
    g = torch.Generator().manual_seed(3)
    image = torch.randn(EXAMPLES, 1, 8, 8, generator=g)
    features = torch.randn(EXAMPLES, 5, generator=g)
    teacher_i = torch.randn(64, 3, generator=g)
    teacher_f = torch.randn(5, 3, generator=g)
    pooled = torch.nn.functional.avg_pool2d(image, 1).flatten(1)
    labels = (pooled @ teacher_i * 0.3 + features @ teacher_f).argmax(1)
    torch.manual_seed(0)
    model = ImageAndFeatures()
    data = directory / "data.safetensors"
    save_file({"image": image, "features": features, "labels": labels.int()}, str(data))
    weights = directory / "weights.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    example = (image[:BATCH], features[:BATCH], labels[:BATCH])
    (directory / "model.mlir").write_text(amp.to_mlir(model, nn.CrossEntropyLoss(), example))
    return directory, model, image, features, labels


def python_accuracy(model, image, features, labels) -> float:
    """amp.compile's run: the training part in order, batch by batch, then
    the held-out tail (the last 10%) through predict."""
    held = EXAMPLES // 10
    train = EXAMPLES - held
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    step = amp.compile(model, nn.CrossEntropyLoss(),
                       (image[:BATCH], features[:BATCH], labels[:BATCH]), optimizer=opt,
                       opt_level="O0")
    for _ in range(EPOCHS):
        for start in range(0, train - BATCH + 1, BATCH):
            end = start + BATCH
            step(image[start:end], features[start:end], labels[start:end])
    correct = 0
    for start in range(train, EXAMPLES, BATCH):
        end = start + BATCH
        logits = step.predict(image[start:end], features[start:end])
        correct += int((logits.argmax(1) == labels[start:end]).sum())
    return 100.0 * correct / held


def command_line_accuracy(directory, *command) -> float:
    metrics = directory / f"{command[0]}.json"
    run = subprocess.run(
        [tool(command[0]), *command[1:], "--dataset=safetensors",
         f"--data-file={directory / 'data.safetensors'}",
         f"--init-from={directory / 'weights.safetensors'}", f"--lr={LR}", f"--epochs={EPOCHS}", "--shuffle=false", "--log-every=0",
         f"--metrics={metrics}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "of image, features and labels" in run.stdout, run.stdout
    return json.loads(metrics.read_text())["test_accuracy_percent"]


def test_amp_run_and_amp_train_match_the_python_api_on_a_data_file(setup):
    directory, model, image, features, labels = setup
    expected = python_accuracy(copy.deepcopy(model), image, features, labels)
    assert expected > 60, expected  # it learned: 3 classes, chance is 33%
    by_run = command_line_accuracy(directory, "amp-run", str(directory / "model.mlir"),
                                   "--opt-level=O0", "--optimizer=sgd")
    artifact = directory / "step.so"
    compiled = subprocess.run([tool("amp-compile"), str(directory / "model.mlir"), "-o",
                               str(artifact), "--opt-level=O0", "--optimizer=sgd"],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    by_train = command_line_accuracy(directory, "amp-train", str(artifact))
    assert abs(by_run - expected) <= 0.5, (by_run, expected)
    assert abs(by_train - expected) <= 0.5, (by_train, expected)


def test_held_out_loss_is_the_models_cross_entropy(tmp_path):
    """amp-run and amp-train score the held-out tail as the model's own
    cross-entropy does: rows labelled its ignore_index (PyTorch's -100)
    count for nothing, its label smoothing is in the loss. With no steps
    the figures are the initial weights', which PyTorch scores the same way
    (1e-5)."""
    g = torch.Generator().manual_seed(5)
    examples, held = 200, 50
    x = torch.randn(examples, 6, generator=g)
    labels = torch.randint(0, 4, (examples,), generator=g)
    labels[torch.rand(examples, generator=g) < 0.3] = -100  # padding rows
    torch.manual_seed(1)
    model = nn.Linear(6, 4)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.2)
    save_file({"input": x, "labels": labels.int()}, str(tmp_path / "data.safetensors"))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()},
              str(tmp_path / "weights.safetensors"))
    text = amp.to_mlir(model, loss_fn, (x[:25], labels[:25]))
    assert "ignore_index -100 label_smoothing" in text
    (tmp_path / "model.mlir").write_text(text)
    with torch.no_grad():
        logits = model(x[-held:])
    tail = labels[-held:]
    want_loss = float(torch.nn.functional.cross_entropy(logits.double(), tail,
                                                        label_smoothing=0.2))
    kept = tail != -100
    want_accuracy = 100.0 * float((logits.argmax(1)[kept] == tail[kept]).float().mean())
    artifact = tmp_path / "step.so"
    compiled = subprocess.run([tool("amp-compile"), str(tmp_path / "model.mlir"), "-o",
                               str(artifact), "--opt-level=O0"], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    for command in ([tool("amp-run"), str(tmp_path / "model.mlir"), "--opt-level=O0"],
                    [tool("amp-train"), str(artifact)]):
        metrics = tmp_path / "metrics.json"
        run = subprocess.run(
            [*command, "--dataset=safetensors", f"--data-file={tmp_path / 'data.safetensors'}",
             "--val-fraction=0.25", f"--init-from={tmp_path / 'weights.safetensors'}",
             "--steps=0", f"--metrics={metrics}"], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        got = json.loads(metrics.read_text())
        assert abs(got["test_loss"] - want_loss) <= 1e-5 * want_loss, (command[0], got, want_loss)
        assert abs(got["test_accuracy_percent"] - want_accuracy) <= 1e-6, (command[0], got)
    # A held-out tail of padding alone scores nothing: null in the metrics
    # (valid JSON), as PyTorch's mean over no rows is NaN.
    labels[-held:] = -100
    save_file({"input": x, "labels": labels.int()}, str(tmp_path / "data.safetensors"))
    run = subprocess.run(
        [tool("amp-train"), str(artifact), "--dataset=safetensors",
         f"--data-file={tmp_path / 'data.safetensors'}", "--val-fraction=0.25",
         f"--init-from={tmp_path / 'weights.safetensors'}", "--steps=0",
         f"--metrics={metrics}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got = json.loads(metrics.read_text())
    assert got["test_loss"] is None and got["test_accuracy_percent"] is None, got
    assert "test accuracy n/a (every held-out label is the loss's ignore_index)" in run.stdout, \
        run.stdout
    # A plain state_dict (no amp metadata) is named without a blank record.
    assert f"parameters and batch-norm state from {tmp_path / 'weights.safetensors'}\n" \
        in run.stdout, run.stdout
