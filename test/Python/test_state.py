"""Step.state_dict / load_state_dict: a resumed run is bit-identical to an
uninterrupted one (parameters, f32 masters, optimizer moments and step
count, loss-scaler state, batch-norm statistics and num_batches_tracked)."""

import copy
import io

import pytest
import torch
import torch.nn as nn

import amp
from models import Net, batches


def compile_net(model, optimizer, **options):
    return amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches(1)[0],
                       optimizer=optimizer, **options)


@pytest.mark.parametrize("opt_level", ["O1", "O2"])
def test_resumed_run_is_bit_identical(opt_level):
    torch.manual_seed(0)
    model = Net()
    fresh = copy.deepcopy(model)
    data = batches(6)
    # A small initial scale that grows every 2 steps: the scaler state moves.
    options = dict(opt_level=opt_level, dtype=torch.float16, init_scale=256.0,
                   growth_interval=2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = compile_net(model, opt, **options)
    for x, y in data[:3]:
        step(x, y)
    buffer = io.BytesIO()
    torch.save(step.state_dict(), buffer)
    uninterrupted = [step(x, y) for x, y in data[3:]]
    final = step.state_dict()

    resumed_model = copy.deepcopy(fresh)
    resumed = compile_net(resumed_model, torch.optim.AdamW(resumed_model.parameters(), lr=1e-3),
                          **options)
    buffer.seek(0)
    resumed.load_state_dict(torch.load(buffer))
    assert [resumed(x, y) for x, y in data[3:]] == uninterrupted
    again = resumed.state_dict()
    assert set(again) == set(final)
    assert any(k.startswith("amp.master.") for k in final) == (opt_level == "O2")
    assert "amp.scaler.scale" in final and float(final["amp.scaler.scale"]) == 2048.0  # 256 doubled every 2 steps
    for key, value in final.items():
        assert torch.equal(again[key], value), key
    step.copy_to(model)
    resumed.copy_to(resumed_model)
    for (name, a), (_, b) in zip(model.state_dict().items(), resumed_model.state_dict().items()):
        assert torch.equal(a, b), name
    assert int(resumed_model.bn.num_batches_tracked) == 6


def test_load_state_dict_checks_keys_and_shapes_and_changes_nothing_on_error():
    torch.manual_seed(0)
    model = Net()
    step = compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                       opt_level="O0")
    state = step.state_dict()
    assert {"conv.weight", "bn.running_mean", "fc.bias", "amp.calls"} <= set(state)
    bad = dict(state)
    del bad["fc.bias"]
    bad["extra"] = torch.zeros(1)
    bad["conv.weight"] = torch.zeros(3)
    with pytest.raises(RuntimeError, match=r"missing keys \['fc.bias'\], unexpected keys "
                                           r"\['extra'\], shape mismatches \['conv.weight: "
                                           r"expected \[8, 1, 3, 3\], given \[3\]'\]"):
        step.load_state_dict(bad)
    for key, value in step.state_dict().items():
        assert torch.equal(value, state[key]), key


def test_o2_masters_round_trip_the_models_f32_weights():
    # O2 keeps f16 parameters with f32 masters (batch norm stays f32): the
    # masters are the model's weights exactly, and copy_to writes them back.
    torch.manual_seed(0)
    model = Net()
    step = compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O2")
    state = step.state_dict()
    assert state["conv.weight"].dtype == torch.float16 and state["bn.weight"].dtype == torch.float32
    # conv.weight, fc.weight and fc.bias are f16 with masters; bn.* stay f32
    assert len([k for k in state if k.startswith("amp.master.")]) == 3
    target = Net()
    step.copy_to(target)
    for (name, a), (_, b) in zip(target.state_dict().items(), model.state_dict().items()):
        assert torch.equal(a, b), name


def test_resume_with_a_scheduler_by_the_documented_recipe_is_bit_identical():
    """docs/Python.md's recipe: the step's state_dict, the optimizer's (its
    param_groups hold the learning rates the step reads at every call) and
    the scheduler's; loaded into new ones, the run goes on bit-identically.
    Without the optimizer's, the resumed run starts again from the initial
    learning rate and differs."""
    torch.manual_seed(0)
    model = Net()
    fresh = copy.deepcopy(model)
    data = batches(6)

    def make(m):
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        return opt, sched, compile_net(m, opt, opt_level="O1")

    opt, sched, step = make(model)
    for x, y in data[:3]:
        step(x, y)
        sched.step()
    buffer = io.BytesIO()
    torch.save({"step": step.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict()}, buffer)
    uninterrupted = []
    for x, y in data[3:]:
        uninterrupted.append(step(x, y))
        sched.step()
    final = step.state_dict()

    def resume(with_optimizer):
        m = copy.deepcopy(fresh)
        opt2, sched2, step2 = make(m)
        buffer.seek(0)
        checkpoint = torch.load(buffer)
        step2.load_state_dict(checkpoint["step"])
        if with_optimizer:
            opt2.load_state_dict(checkpoint["optimizer"])
        sched2.load_state_dict(checkpoint["scheduler"])
        results = []
        for x, y in data[3:]:
            results.append(step2(x, y))
            sched2.step()
        return results, step2.state_dict()

    results, again = resume(with_optimizer=True)
    assert results == uninterrupted
    for key, value in final.items():
        assert torch.equal(again[key], value), key
    # The learning rates live in the optimizer: without its state_dict the
    # resumed run uses 0.1 again instead of 0.1 / 8, and differs.
    results, _ = resume(with_optimizer=False)
    assert results != uninterrupted


def _pointers(model):
    return {name: t.data_ptr() for name, t in model.state_dict(keep_vars=True).items()}


@pytest.mark.parametrize("opt_level", ["O1", "O2"])
def test_the_step_trains_the_models_tensors_in_place(opt_level):
    """train_in_place (the default): the model's f32 parameters and batch-norm
    statistics are the step's memory for them (the f32 masters at O2): after
    every call the model holds exactly the step's values, in the same
    tensors, without copy_to; writing into the model writes the step's
    state. train_in_place=False trains apart, with the same losses bit for
    bit, and leaves the model alone until copy_to."""
    torch.manual_seed(0)
    model = Net()
    apart_model = copy.deepcopy(model)
    initial = copy.deepcopy(model.state_dict())
    pointers = _pointers(model)
    options = dict(opt_level=opt_level, dtype=torch.float16)
    step = compile_net(model, torch.optim.AdamW(model.parameters(), lr=1e-2), **options)
    apart = compile_net(apart_model, torch.optim.AdamW(apart_model.parameters(), lr=1e-2),
                        train_in_place=False, **options)
    masters = {"O1": {}, "O2": {"conv.weight": "amp.master.0", "fc.weight": "amp.master.1",
                                "fc.bias": "amp.master.2"}}[opt_level]
    for calls, (x, y) in enumerate(batches(3), 1):
        assert step(x, y).loss == apart(x, y).loss
        state = step.state_dict()
        for name, tensor in model.state_dict().items():
            if name.endswith("num_batches_tracked"):  # i32 in the step, counted
                assert tensor.dtype == torch.int64 and int(tensor) == calls
                continue
            expected = state[masters.get(name, name)]
            assert expected.dtype == torch.float32
            assert torch.equal(tensor, expected), name
            assert not torch.equal(tensor, initial[name]), name
    assert _pointers(model) == pointers  # the same memory, trained
    for name, tensor in apart_model.state_dict().items():
        assert torch.equal(tensor, initial[name]), name  # untouched until copy_to
    apart.copy_to(apart_model)
    for name, tensor in apart_model.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name]), name

    # The model's writes are the step's next values (as for an optimizer).
    with torch.no_grad():
        model.fc.bias.fill_(0.25)
        model.bn.running_mean.fill_(-1.0)
    state = step.state_dict()
    assert torch.equal(state[masters.get("fc.bias", "fc.bias")], torch.full((10,), 0.25))
    assert torch.equal(state["bn.running_mean"], torch.full((8,), -1.0))
    # A resumed state's count is the model's too.
    state["amp.calls"] = torch.tensor(7)
    step.load_state_dict(state)
    assert int(model.bn.num_batches_tracked) == 7


def test_tensors_the_step_cannot_share_keep_a_copy_until_copy_to():
    """A parameter whose memory is not 64-byte aligned (a view into another
    tensor) keeps a copy in the step: the model's value stays until
    copy_to, while the others train in place; a step compiled after it
    starts from the trained values, and an unknown option type is refused."""
    torch.manual_seed(0)
    model = Net(bias=True)
    storage = torch.zeros(model.fc.bias.numel() + 1)
    storage[1:] = model.fc.bias.detach()
    model.fc.bias = nn.Parameter(storage[1:])  # 4 bytes past an aligned block
    assert model.fc.bias.data_ptr() % 64 != 0
    bias = model.fc.bias.detach().clone()
    step = compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O0")
    for x, y in batches(2):
        step(x, y)
    state = step.state_dict()
    assert torch.equal(model.fc.bias.detach(), bias)
    assert not torch.equal(state["fc.bias"], bias)
    assert torch.equal(model.fc.weight.detach(), state["fc.weight"])
    step.copy_to(model)
    assert torch.equal(model.fc.bias.detach(), state["fc.bias"])

    again = compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O0")
    for name, tensor in again.state_dict().items():
        if not name.startswith("amp."):
            assert torch.equal(tensor, state[name]), name
    with pytest.raises(TypeError, match="train_in_place must be a bool"):
        compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1), train_in_place="yes")


def test_o2_16_bit_parameters_follow_the_models_writes():
    """At O2 the model's tensors are the f32 masters; a write into the model
    (load_state_dict) reaches the 16-bit parameters the forward reads
    before the next call: the losses equal those of a step given the same
    values by load_from."""
    torch.manual_seed(0)
    model, twin, other = Net(), None, Net()
    twin = copy.deepcopy(model)
    options = dict(opt_level="O2", dtype=torch.float16)
    step = compile_net(model, torch.optim.AdamW(model.parameters(), lr=1e-2), **options)
    apart = compile_net(twin, torch.optim.AdamW(twin.parameters(), lr=1e-2),
                        train_in_place=False, **options)
    data = batches(3)
    assert step(*data[0]).loss == apart(*data[0]).loss
    model.load_state_dict(other.state_dict())
    apart.load_from(other)
    for x, y in data[1:]:
        assert step(x, y).loss == apart(x, y).loss
    for key, value in apart.state_dict().items():
        assert torch.equal(step.state_dict()[key], value), key


def test_in_place_training_carries_over_to_another_batch_shape():
    """A smaller last batch runs on a step compiled for its shape: it trains
    the same model tensors, which hold every call's values without
    copy_to."""
    torch.manual_seed(0)
    model = Net()
    twin = copy.deepcopy(model)
    step = compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    apart = compile_net(twin, torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9),
                        train_in_place=False)
    (x, y), = batches(1)
    for batch in ((x, y), (x[:5], y[:5]), (x, y), (x[:5], y[:5])):
        assert step(*batch).loss == apart(*batch).loss
        state = apart.state_dict()
        for name, tensor in model.state_dict().items():
            if not name.endswith("num_batches_tracked"):
                assert torch.equal(tensor, state[name]), name
    assert int(model.bn.num_batches_tracked) == 4


def test_a_tensor_given_other_memory_leaves_the_step():
    """p.data = t gives the model's Parameter other memory: the step goes on
    with the memory it was given (kept alive by the step), and the new
    tensor is the model's own."""
    torch.manual_seed(0)
    model = Net(bias=True)
    twin = copy.deepcopy(model)
    step = compile_net(model, torch.optim.SGD(model.parameters(), lr=0.1))
    apart = compile_net(twin, torch.optim.SGD(twin.parameters(), lr=0.1), train_in_place=False)
    data = batches(3)
    assert step(*data[0]).loss == apart(*data[0]).loss
    replaced = torch.zeros_like(model.fc.weight)
    model.fc.weight.data = replaced
    import gc
    gc.collect()
    for x, y in data[1:]:
        assert step(x, y).loss == apart(x, y).loss
    assert torch.equal(model.fc.weight.detach(), torch.zeros_like(replaced))
    assert torch.equal(step.state_dict()["fc.weight"], apart.state_dict()["fc.weight"])
