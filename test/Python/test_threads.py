"""amp.set_num_threads / get_num_threads: the threads compiled CPU steps run
on. A CPU step's generated loops compute each output in one task, in the
same order for any thread count, so the net (a conv, batch norm, pooling,
linear) trains to the same result with 1 and 2 threads up to the GEMMs'
rounding (OpenBLAS splits its sums by the thread count): 1e-5 relative."""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import Net, batches


def train(threads, model, data):
    amp.set_num_threads(threads)
    assert amp.get_num_threads() == threads
    model = copy.deepcopy(model)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                       opt_level="O0")
    losses = [step(x, y).loss for x, y in data]
    step.copy_to(model)
    return losses, model.state_dict()


def test_one_and_two_threads_train_alike():
    torch.manual_seed(0)
    model, data = Net(), batches(3)
    before = amp.get_num_threads()
    try:
        one, state_one = train(1, model, data)
        two, state_two = train(2, model, data)
        again, state_again = train(2, model, data)
    finally:
        amp.set_num_threads(before)
    assert two == again  # a fixed thread count: bit-identical
    for name, a in state_two.items():
        assert torch.equal(a, state_again[name]), name
    for a, b in zip(one, two):
        assert abs(a - b) <= 1e-5 * abs(b)
    for name, a in state_one.items():
        b = state_two[name]
        if b.is_floating_point():
            scale = b.abs().max().item() or 1.0
            assert (a - b).abs().max().item() <= 1e-5 * scale, name
        else:
            assert torch.equal(a, b), name


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_thread_count_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="positive integer"):
        amp.set_num_threads(bad)
