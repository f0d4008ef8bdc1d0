"""Step.memory_plan: the plan of a compiled CPU step's working memory
(amp-plan-memory), known before the first step runs."""

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
