"""What amp.compile takes from the optimizer: param groups (their own lr and
weight_decay, e.g. no decay on biases and norms), schedulers that change
each group's rate, frozen parameters and tied weights; each against
PyTorch's own training loop at O0 (every parameter and buffer within 1e-4
relative of the tensor's largest magnitude after 5 steps, as
test_parity.py; f32 sums in another order differ by about 1e-7 per step).
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import Net, batches
from test_parity import assert_close_state


def train_both(model, make_optimizer, steps=5, scheduler=None):
    """Trains ``model`` with amp.compile and a copy with PyTorch; returns
    (amp's model after copy_to, PyTorch's, amp's losses, PyTorch's)."""
    ref = copy.deepcopy(model)
    opt, ref_opt = make_optimizer(model), make_optimizer(ref)
    sched = scheduler(opt) if scheduler else None
    ref_sched = scheduler(ref_opt) if scheduler else None
    data = batches(steps)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=opt, opt_level="O0")
    losses, ref_losses = [], []
    for x, y in data:
        losses.append(step(x, y).loss)
        ref_opt.zero_grad()
        loss = nn.functional.cross_entropy(ref(x), y)
        loss.backward()
        ref_opt.step()
        ref_losses.append(loss.item())
        if sched:
            sched.step()
            ref_sched.step()
    step.copy_to(model)
    for got, want in zip(losses, ref_losses):
        assert abs(got - want) <= 1e-4 * abs(want)
    return model, ref


def no_decay_groups(model, optimizer, lr, bias_lr, **kwargs):
    """The usual recipe: weight decay on weight matrices and kernels only,
    biases and norm parameters in a group of their own (here also with
    their own rate)."""
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    rest = [p for n, p in model.named_parameters() if p.dim() <= 1]
    return optimizer([{"params": decay, "weight_decay": 0.01},
                      {"params": rest, "weight_decay": 0.0, "lr": bias_lr}], lr=lr, **kwargs)


def test_sgd_param_groups_without_decay_on_biases_and_norms():
    torch.manual_seed(0)
    model, ref = train_both(Net(), lambda m: no_decay_groups(
        m, torch.optim.SGD, lr=0.05, bias_lr=0.02, momentum=0.9))
    assert_close_state(model, ref, 1e-4)


def test_adamw_param_groups():
    torch.manual_seed(0)
    model, ref = train_both(Net(), lambda m: no_decay_groups(
        m, torch.optim.AdamW, lr=1e-3, bias_lr=3e-3, betas=(0.9, 0.99)))
    assert_close_state(model, ref, 1e-4)


def test_scheduler_changing_each_groups_rate_differently():
    torch.manual_seed(0)
    model, ref = train_both(
        Net(), lambda m: no_decay_groups(m, torch.optim.SGD, lr=0.05, bias_lr=0.02, momentum=0.9),
        scheduler=lambda o: torch.optim.lr_scheduler.LambdaLR(
            o, [lambda e: 0.5 ** e, lambda e: 1.0 + e]))
    assert_close_state(model, ref, 1e-4)


@pytest.mark.parametrize("how", ["requires_grad", "not_in_optimizer"])
def test_frozen_parameter_is_not_updated(how):
    torch.manual_seed(0)
    model = Net()
    if how == "requires_grad":
        model.conv.weight.requires_grad_(False)
    frozen = model.conv.weight.detach().clone()
    model, ref = train_both(model, lambda m: torch.optim.SGD(
        [p for n, p in m.named_parameters() if n != "conv.weight"], lr=0.05, momentum=0.9,
        weight_decay=5e-4))
    assert torch.equal(model.conv.weight, frozen)
    assert_close_state(model, ref, 1e-4)

def test_only_the_optimizers_parameters_are_trained():
    model = Net()
    step = amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], opt_level="O0",
                       optimizer=torch.optim.SGD(model.fc.parameters(), lr=0.1))
    # fc.weight and fc.bias are parameters; conv and bn parameters are
    # arguments the step returns unchanged (no gradient work), as are the
    # running statistics updated by batch norm.
    assert step.mlir.count("train.param,") == 2
    with pytest.raises(ValueError, match="trains none of the model's parameters"):
        amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0],
                    optimizer=torch.optim.SGD(Net().parameters(), lr=0.1))


class TiedLinear(nn.Module):
    """Two layers holding the same Parameter (weight tying)."""

    def __init__(self):
        super().__init__()
        self.encode = nn.Linear(784, 784, bias=False)
        self.decode = nn.Linear(784, 784, bias=False)
        self.decode.weight = self.encode.weight
        self.head = nn.Linear(784, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.head(torch.tanh(self.decode(torch.tanh(self.encode(x)))))


def test_tied_weight_stays_one_parameter():
    torch.manual_seed(0)
    model = TiedLinear()
    tied = model.encode.weight
    text = amp.to_mlir(model, nn.CrossEntropyLoss(), batches(1)[0])
    assert text.count("train.param") == 3  # encode.weight (= decode.weight), head.*
    model, ref = train_both(model, lambda m: torch.optim.SGD(m.parameters(), lr=0.01,
                                                            momentum=0.9))
    assert model.encode.weight is tied and model.decode.weight is tied
    assert_close_state(model, ref, 1e-4)


def test_groups_may_not_differ_in_compiled_hyper_parameters():
    model = Net()
    opt = torch.optim.SGD([{"params": model.conv.parameters(), "momentum": 0.5},
                           {"params": model.fc.parameters()}], lr=0.1, momentum=0.9)
    with pytest.raises(NotImplementedError, match="param group 1 has momentum=0.9, group 0 0.5"):
        amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], optimizer=opt)


def test_a_group_added_after_compile_is_an_error():
    model = Net()
    opt = torch.optim.SGD(model.conv.parameters(), lr=0.1)
    step = amp.compile(model, nn.CrossEntropyLoss(), batches(1)[0], optimizer=opt,
                       opt_level="O0")
    opt.add_param_group({"params": model.fc.parameters()})
    with pytest.raises(ValueError, match="the optimizer has 2 param groups; the step was "
                                         "compiled for 1"):
        step(*batches(1)[0])
