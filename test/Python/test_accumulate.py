"""accumulate= and clip_grad_norm= against PyTorch's loops.

Gradient accumulation as the AMP tutorials write it (``loss / N`` per
micro-batch, one optimizer step per N), gradient clipping as
``clip_grad_norm_`` on the unscaled gradients (after ``scaler.unscale_``).
O0: every call's loss and the parameters within 1e-4 relative; O1 f16:
the loss curve within 1% and the same loss scale.
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import Net, batches, mlp, reference_losses


CASES = {"accumulate-3": (3, None), "clip-0.5": (1, 0.5), "accumulate-2-clip-0.1": (2, 0.1)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_o0_matches_pytorch(case):
    accumulate, clip = CASES[case]
    torch.manual_seed(0)
    model = Net()
    ref = copy.deepcopy(model)
    make = lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)
    opt, ref_opt = make(model.parameters()), make(ref.parameters())
    data = batches(6)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0], optimizer=opt,
                       opt_level="O0", accumulate=accumulate, clip_grad_norm=clip)
    for (x, y), (want, _) in zip(data, reference_losses(ref, ref_opt, data, accumulate=accumulate, clip=clip)):
        got = step(x, y)
        assert abs(got.loss - want) <= 1e-4 * abs(want)
    step.copy_to(model)
    for name, value in model.state_dict().items():
        want = ref.state_dict()[name]
        if not want.is_floating_point():
            assert torch.equal(value, want), name
            continue
        assert (value - want).abs().max() <= 1e-4 * want.abs().max(), name


def test_o1_f16_with_accumulate_and_clip_matches_autocast():
    torch.manual_seed(0)
    model = mlp()
    ref = copy.deepcopy(model)
    make = lambda p: torch.optim.AdamW(p, lr=1e-3)
    opt, ref_opt = make(model.parameters()), make(ref.parameters())
    data = batches(24)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0], optimizer=opt,
                       opt_level="O1", dtype=torch.float16, accumulate=2, clip_grad_norm=1.0)
    for (x, y), (want, scale) in zip(data, reference_losses(ref, ref_opt, data, torch.float16, accumulate=2, clip=1.0)):
        got = step(x, y)
        assert abs(got.loss - want) <= 1e-2 * abs(want)
        assert got.scale == scale


@pytest.mark.parametrize("options", [dict(accumulate=0), dict(accumulate=1.5),
                                     dict(clip_grad_norm=0.0), dict(clip_grad_norm=-1)])
def test_bad_values_are_value_errors(options):
    model = mlp()
    with pytest.raises(ValueError):
        amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches(1)[0],
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), **options)
