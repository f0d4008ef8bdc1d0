"""Batches as a DataLoader gives them: a list, and a smaller last batch."""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import mlp
from test_parity import assert_close_state


def loader(drop_last: bool):
    g = torch.Generator().manual_seed(3)
    data = torch.utils.data.TensorDataset(torch.randn(20, 1, 28, 28, generator=g),
                                          torch.randint(0, 10, (20,), generator=g))
    return torch.utils.data.DataLoader(data, batch_size=8, shuffle=False, drop_last=drop_last)


def test_last_smaller_batch_trains_as_pytorch():
    """drop_last=False: batches of 8, 8 and 4. The step compiles the size-4
    shape once more, sharing parameters, momentum and scaler state; after
    two epochs every parameter is PyTorch's within the O0 tolerance (1e-4),
    and each loss too."""
    torch.manual_seed(0)
    model = mlp()
    ref = copy.deepcopy(model)
    make = lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)  # noqa: E731
    opt, ref_opt = make(model.parameters()), make(ref.parameters())
    first = next(iter(loader(False)))
    assert isinstance(first, list)  # what a DataLoader yields
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=first, optimizer=opt,
                       opt_level="O0")
    sizes = []
    for _ in range(2):
        for x, y in loader(False):
            ref_opt.zero_grad()
            want = nn.functional.cross_entropy(ref(x), y)
            want.backward()
            ref_opt.step()
            got = step(x, y)
            sizes.append(len(x))
            assert abs(got.loss - want.item()) <= 1e-4 * abs(want.item())
    assert sizes == [8, 8, 4] * 2
    step.copy_to(model)
    assert_close_state(model, ref, 1e-4)
    assert int(step.state_dict()["amp.calls"]) == 6
    # predict at either size runs the step compiled for it
    ref.eval()
    for x, _ in loader(False):
        with torch.no_grad():
            assert torch.allclose(step.predict(x), ref(x), rtol=1e-4, atol=1e-5)


def test_a_new_batch_size_of_the_wrong_type_is_refused_before_compiling():
    torch.manual_seed(0)
    model = mlp()
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=next(iter(loader(True))),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O0")
    with pytest.raises(ValueError, match="target: expected an integer tensor"):
        step(torch.randn(4, 1, 28, 28), torch.zeros(4))
    assert len(step._variants) == 1


def test_other_shape_changes_stay_a_value_error():
    torch.manual_seed(0)
    model = mlp()
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=next(iter(loader(True))),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O0")
    with pytest.raises(ValueError, match=r"input: expected shape \[8, 1, 28, 28\], given "
                                         r"\[8, 1, 28, 27\]"):
        step(torch.randn(8, 1, 28, 27), torch.zeros(8, dtype=torch.long))
