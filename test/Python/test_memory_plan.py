"""Step.memory_plan: the plan of a compiled CPU step's working memory
(amp-plan-memory), known before the first step runs."""

import pytest
import torch
import torch.nn as nn

import amp
from models import Net, batches


def test_a_convolutional_step_has_a_plan_that_holds_its_activations():
    torch.manual_seed(0)
    model = Net()
    x, y = batches(1)[0]
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                       opt_level="O1", dtype=torch.bfloat16)
    plan = step.memory_plan
    assert isinstance(plan, amp.MemoryPlan)
    # The convolution's f32 output [batch, 8, 28, 28] is written by the
    # runtime and read by batch norm: it is one buffer of the arena, as is
    # the bf16 copy of the batch the convolution reads.
    conv_out = x.shape[0] * 8 * 28 * 28 * 4
    assert plan.arena_bytes >= plan.live_peak_bytes >= conv_out
    assert plan.buffers > 0 and plan.unplanned_buffers == 0
    # The breakdown is the bytes live at the peak: they sum to it.
    assert sum(plan.at_peak.values()) == plan.live_peak_bytes
    assert str(plan).startswith(f"{plan.arena_bytes / 2**20:.1f} MiB arena for "
                                f"{plan.buffers} buffers (at the peak: ")
    # The plan describes the step that runs: it trains.
    losses = [step(*b).loss for b in batches(3)]
    assert all(torch.isfinite(torch.tensor(losses)))


def test_without_the_plan_the_step_has_none(monkeypatch):
    monkeypatch.setenv("AMP_MEMORY_PLAN", "0")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
    x, y = torch.randn(4, 16), torch.randint(0, 4, (4,))
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    assert step.memory_plan is None


def _gelu_mlp():
    return nn.Sequential(nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 128),
                         nn.LayerNorm(128), nn.Linear(128, 512), nn.GELU(approximate="tanh"),
                         nn.Linear(512, 10))


def _deep_gelu_mlp():
    return nn.Sequential(*[nn.Sequential(nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 128))
                           for _ in range(4)], nn.Linear(128, 10))


def _train(memory_budget, data, recompute_gemms=False, model_fn=_gelu_mlp):
    torch.manual_seed(0)
    model = model_fn()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0], optimizer=opt,
                       opt_level="O1", dtype=torch.bfloat16, memory_budget=memory_budget,
                       recompute_gemms=recompute_gemms)
    losses = [step(*batch).loss for batch in data]
    return step, losses, step.state_dict()


def test_a_memory_budget_recomputes_the_same_bits_in_less_memory():
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(256, 128, generator=g), torch.randint(0, 10, (256,), generator=g))
            for _ in range(4)]
    kept, kept_losses, kept_state = _train(None, data)
    recomputed, losses, state = _train(0.5, data)
    # GELU outputs, layer norm outputs and their bf16 copies come back in
    # the backward pass from the GEMM outputs and statistics kept anyway:
    # every loss and parameter is the same bit for bit, and the arena
    # shrinks (by 10% here: the weights' gradients and the runtime's
    # workspaces stay).
    assert losses == kept_losses
    assert state.keys() == kept_state.keys()
    for key, value in kept_state.items():
        assert torch.equal(state[key], value), key
    plan = recomputed.memory_plan
    assert plan.arena_bytes < 0.95 * kept.memory_plan.arena_bytes
    # The plan says what was recomputed.
    assert plan.recomputed_values > 0 and plan.recomputed_bytes >= 64 * 1024
    assert kept.memory_plan.recomputed_values == 0
    assert f"{plan.recomputed_values} values recomputed in backward" in str(plan) or \
        "1 value recomputed in backward" in str(plan)


def test_recompute_gemms_goes_further_with_the_same_bits():
    g = torch.Generator().manual_seed(2)
    data = [(torch.randn(256, 128, generator=g), torch.randint(0, 10, (256,), generator=g))
            for _ in range(3)]
    kept, kept_losses, kept_state = _train(None, data, model_fn=_deep_gelu_mlp)
    cheap, _, _ = _train(0.3, data, model_fn=_deep_gelu_mlp)
    gemms, losses, state = _train(0.3, data, recompute_gemms=True, model_fn=_deep_gelu_mlp)
    # A budget the element-wise values cannot reach: with recompute_gemms
    # the GEMM outputs behind the GELUs are computed again in the backward
    # pass too, for a smaller arena than without, and the same bits as
    # keeping everything.
    assert losses == kept_losses
    for key, value in kept_state.items():
        assert torch.equal(state[key], value), key
    assert cheap.memory_plan.recomputed_gemms == 0
    plan = gemms.memory_plan
    assert plan.recomputed_gemms > 0
    assert plan.arena_bytes < cheap.memory_plan.arena_bytes
    assert f"{plan.recomputed_gemms} GEMM" in str(plan)


def test_recompute_gemms_is_checked():
    model = _gelu_mlp()
    x, y = torch.randn(4, 128), torch.randint(0, 10, (4,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for budget in (None, 1):
        with pytest.raises(ValueError, match="recompute_gemms=True needs a memory_budget below 1"):
            amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                        memory_budget=budget, recompute_gemms=True)
    with pytest.raises(TypeError, match="recompute_gemms must be a bool"):
        amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                    memory_budget=0.5, recompute_gemms="yes")


def test_memory_budget_is_checked():
    model = _gelu_mlp()
    x, y = torch.randn(4, 128), torch.randint(0, 10, (4,))
    for bad in (0, 1.5, -0.5, True, "half"):
        with pytest.raises(ValueError, match="memory_budget must be a fraction in"):
            amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                        memory_budget=bad)
