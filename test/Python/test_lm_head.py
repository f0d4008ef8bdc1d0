"""The fused LM head (train.linear_cross_entropy): a bias-free last linear
layer whose logits only the cross-entropy reads is one op with its loss in
the compiled step, whose CPU kernels compute the logits a block of rows at a
time. Checked against PyTorch's own loop (f32), against the unfused head
(``lm_head="decomposed"``) at O1-bf16, and by the memory plan: no [rows,
vocabulary] tensor is left in the step."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import amp


class TinyLM(nn.Module):
    """Embedding, one GELU MLP block with layer norm, and a head: tied to the
    embedding (``x @ wte.t()``), a bias-free nn.Linear, or one with a bias."""

    def __init__(self, vocab, hidden=32, head="tied"):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        # GPT-2's scale of initial embeddings (N(0, 1) would start every
        # tied logit at N(0, hidden): a loss of ~30 and AdamW steps that
        # amplify summation-order differences).
        nn.init.normal_(self.wte.weight, std=0.1)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.proj = nn.Linear(4 * hidden, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.head_kind = head
        if head != "tied":
            self.head = nn.Linear(hidden, vocab, bias=head == "bias")

    def forward(self, ids):
        h = self.wte(ids)
        h = h + self.proj(F.gelu(self.fc(h)))
        h = self.ln(h)
        logits = h @ self.wte.weight.t() if self.head_kind == "tied" else self.head(h)
        return logits.reshape(-1, logits.shape[-1])


def _data(vocab, batch=4, seq=16, steps=3, ignore=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    data = []
    for _ in range(steps):
        ids = torch.randint(0, vocab, (batch, seq), generator=g)
        labels = torch.randint(0, vocab, (batch * seq,), generator=g)
        if ignore:
            labels[::5] = -100
        data.append((ids, labels))
    return data


def _amp(model, loss_fn, data, **options):
    model = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    step = amp.compile(model, loss_fn, example_inputs=data[0], optimizer=opt, cache=False,
                       **options)
    losses = [step(*batch).loss for batch in data]
    return step, losses, step.state_dict()


def _torch(model, loss_fn, data):
    model = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for ids, labels in data:
        loss = loss_fn(model(ids), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model.state_dict()


@pytest.mark.parametrize("head", ["tied", "linear"])
def test_fused_head_trains_as_pytorch_at_f32(head):
    torch.manual_seed(0)
    vocab = 300
    model = TinyLM(vocab, head=head)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=0.1)
    data = _data(vocab, ignore=True)
    _, losses, state = _amp(model, loss_fn, data, opt_level="O0")
    _, unfused, unfused_state = _amp(model, loss_fn, data, opt_level="O0", lm_head="decomposed")
    reference, reference_state = _torch(model, loss_fn, data)
    # f32 throughout: the fused head sums in another order than PyTorch's
    # and the unfused head's GEMMs (1e-5 relative on the loss, 1e-4 on the
    # parameters after three AdamW steps).
    assert losses == pytest.approx(reference, rel=1e-5)
    assert unfused == pytest.approx(reference, rel=1e-5)
    for name, value in reference_state.items():
        torch.testing.assert_close(state[name], value, rtol=1e-4, atol=1e-4, msg=name)
        torch.testing.assert_close(unfused_state[name], value, rtol=1e-4, atol=1e-4, msg=name)


def test_fused_head_at_bf16_agrees_with_the_unfused_head():
    torch.manual_seed(0)
    vocab = 2000
    model = TinyLM(vocab)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    data = _data(vocab, ignore=True)
    _, losses, _ = _amp(model, loss_fn, data, opt_level="O1", dtype=torch.bfloat16)
    _, unfused, _ = _amp(model, loss_fn, data, opt_level="O1", dtype=torch.bfloat16,
                         lm_head="decomposed")
    # The same bf16 logits (rounded once from f32 sums) and an f32 loss:
    # the losses agree to the f32 summation order, and after two bf16
    # updates to bf16's resolution (the weight gradient is summed over
    # every row in f32 by the fused kernel, per batch index and then added
    # by the unfused one).
    assert losses[0] == pytest.approx(unfused[0], rel=1e-5)
    assert losses == pytest.approx(unfused, rel=2e-3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        reference = [loss_fn(model(ids), labels).item() for ids, labels in data[:1]]
    assert losses[0] == pytest.approx(reference[0], rel=1e-2)


def test_the_fused_step_holds_no_logits():
    torch.manual_seed(0)
    vocab, batch, seq = 8192, 16, 128
    model = TinyLM(vocab)
    data = _data(vocab, batch=batch, seq=seq, steps=1)
    options = dict(opt_level="O1", dtype=torch.bfloat16)
    fused, _, _ = _amp(model, nn.CrossEntropyLoss(), data, **options)
    unfused, _, _ = _amp(model, nn.CrossEntropyLoss(), data, lm_head="decomposed", **options)
    logits_f32 = batch * seq * vocab * 4
    # The unfused step keeps the [2048, 8192] logits (f32 for the loss, bf16
    # from the GEMM, and their gradient) at its peak; the fused one blocks of
    # 256 rows: its whole arena is less than half the f32 logits alone.
    assert fused.memory_plan.arena_bytes + logits_f32 <= unfused.memory_plan.arena_bytes
    assert fused.memory_plan.arena_bytes < logits_f32 // 2


def test_a_head_with_a_bias_stays_unfused():
    torch.manual_seed(0)
    vocab = 1024
    model = TinyLM(vocab, head="bias")
    data = _data(vocab, steps=1)
    fused, losses, _ = _amp(model, nn.CrossEntropyLoss(), data)
    unfused, unfused_losses, _ = _amp(model, nn.CrossEntropyLoss(), data, lm_head="decomposed")
    assert fused.memory_plan.arena_bytes == unfused.memory_plan.arena_bytes
    assert losses == unfused_losses


def test_predict_still_returns_the_logits():
    torch.manual_seed(0)
    vocab = 300
    model = TinyLM(vocab)
    data = _data(vocab, steps=1)
    step, _, _ = _amp(model, nn.CrossEntropyLoss(), data, opt_level="O0")
    trained = copy.deepcopy(model)
    step.copy_to(trained)
    with torch.no_grad():
        expected = trained.eval()(data[0][0])
    torch.testing.assert_close(step.predict(data[0][0]), expected, rtol=1e-5, atol=1e-5)


def test_lm_head_must_be_fused_or_decomposed():
    model = TinyLM(50)
    data = _data(50, steps=1)
    with pytest.raises(ValueError, match="lm_head must be 'fused' or 'decomposed'"):
        amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), lm_head="chunked")
