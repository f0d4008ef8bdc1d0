"""Models of today's mixed-precision training through amp.compile, against
PyTorch's own training loop: HuggingFace transformers (GPT-2, Llama) and a
model with registered buffers, built from small configs (no download).

O0, 5 steps from the same weights on the same batches: every step's loss
within 1e-4 relative of PyTorch's, then every parameter and buffer within
1e-4 relative (of the tensor's largest magnitude), as test_parity.py holds
the CNNs (docs/Numerics.md).

What makes these models import (python/amp/_importer/folding.py): the
causal mask HuggingFace builds from ``arange`` and comparisons, the position
ids and Llama's rotary cos/sin tables (from its ``inv_freq`` buffer) depend
on no batch: PyTorch computes them at import, the mask is recognised as
causal, the tables enter the step as constants.
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import reference_losses
from test_parity import assert_close_state

VOCAB, SEQ, BATCH = 512, 32, 4

OPTIMIZERS = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=5e-4),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-4, weight_decay=0.01),
}


class Logits(nn.Module):
    """What users write around a HuggingFace causal LM in their own loop:
    the logits of every position, flattened for cross entropy."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, use_cache=False).logits.reshape(-1, VOCAB)


def lm_batches(count: int, seed: int = 1):
    """(token ids [BATCH, SEQ], next-token targets [BATCH * SEQ])."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, VOCAB, (BATCH, SEQ), generator=g),
             torch.randint(0, VOCAB, (BATCH * SEQ,), generator=g)) for _ in range(count)]


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel  # pinned by scripts/setup.sh
    return GPT2LMHeadModel(GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=SEQ,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))


def llama(tied: bool) -> nn.Module:
    """Grouped-query attention (4 query heads over 2 key/value heads),
    RMSNorm, rotary embeddings, SiLU-gated MLP."""
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=SEQ,
        tie_word_embeddings=tied, bos_token_id=0, eos_token_id=0, pad_token_id=0))


def f64_losses(model: nn.Module, make_optimizer, data):
    """PyTorch's loop on ``model`` converted to f64 in place: the losses."""
    model.double()
    optimizer = make_optimizer(model.parameters())
    losses = []
    for *inputs, y in data:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(
            model(*(x.double() if x.is_floating_point() else x for x in inputs)), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def check_o0(model: nn.Module, make_optimizer, data, rtol: float = 1e-4,
             envelope: bool = False):
    """amp's O0 step and PyTorch's loop side by side: each loss within
    ``rtol`` of PyTorch's, then every state tensor within ``rtol`` (of its
    largest magnitude).

    ``envelope``: where Adam makes every f32 run noisy (a gradient that is
    zero but for rounding, such as attention's key bias or a row of an
    embedding no batch uses, becomes a full step; docs/Numerics.md), amp is
    held to an f64 run of PyTorch's loop instead: the first loss within
    1e-5 of PyTorch's f32 one, every loss and state tensor no further from
    f64 than ``rtol`` or 2x PyTorch's own f32 run. A tensor that is zero in
    exact arithmetic (below 1e-12 in the f64 run: a bias whose gradient a
    following normalization removes) holds rounding noise in every f32 run:
    amp's within 1e-6, or 4x PyTorch's."""
    ref = copy.deepcopy(model)
    exact = copy.deepcopy(model) if envelope else None
    opt, ref_opt = make_optimizer(model.parameters()), make_optimizer(ref.parameters())
    before = copy.deepcopy(model.state_dict())
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=opt, opt_level="O0")
    for name, value in model.state_dict().items():  # compile changes nothing
        assert torch.equal(value, before[name]), name
    theirs = [loss for loss, _ in reference_losses(ref, ref_opt, data)]
    ours = []
    for batch in data:
        got = step(*batch)
        assert not got.skipped
        ours.append(got.loss)
    step.copy_to(model)
    if not envelope:
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert abs(a - b) <= rtol * abs(b), (i, a, b)
        assert_close_state(model, ref, rtol)
        return step
    truth = f64_losses(exact, make_optimizer, data)
    assert abs(ours[0] - theirs[0]) <= 1e-5 * abs(theirs[0]), (ours[0], theirs[0])
    for i, (a, b, t) in enumerate(zip(ours, theirs, truth)):
        assert abs(a - t) <= max(rtol * abs(t), 2 * abs(b - t)), (i, a, b, t)
    exact_state = exact.state_dict()
    for (name, a), (_, b) in zip(model.state_dict().items(), ref.state_dict().items()):
        if not b.is_floating_point():
            assert torch.equal(a, b), name
            continue
        t = exact_state[name].double()
        if t.abs().max().item() < 1e-12:
            # Zero in exact arithmetic (a bias whose gradient the next
            # normalization removes): each f32 run holds rounding noise.
            noise = a.double().abs().max().item()
            assert noise <= max(1e-6, 4 * b.double().abs().max().item()), (name, noise)
            continue
        scale = t.abs().max().item()
        ours_err = (a.double() - t).abs().max().item() / scale
        theirs_err = (b.double() - t).abs().max().item() / scale
        assert ours_err <= max(rtol, 2 * theirs_err), (name, ours_err, theirs_err)
    return step


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_gpt2_o0_matches_pytorch(optimizer):
    """GPT2LMHeadModel: Conv1D projections (addmm), the causal mask built in
    the model, tied embeddings, gelu_new. AdamW is held to the f64 envelope:
    c_attn's key bias has an exactly zero gradient (softmax ignores a
    constant per row), rounding noise that Adam turns into lr-sized steps in
    any f32 run (PyTorch's own ends 1e-3 from amp's there)."""
    torch.manual_seed(0)
    step = check_o0(Logits(gpt2()), OPTIMIZERS[optimizer], lm_batches(5),
                    envelope=optimizer == "adamw")
    assert "causal" in step.mlir  # the mask folded at import, recognised


class DefaultLogits(Logits):
    """As Logits, calling the model as most training scripts do: with
    ``use_cache`` at its default (True), so each layer's DynamicCache starts
    from ``torch.tensor([])`` and concatenates the keys onto it."""

    def forward(self, ids):
        return self.model(ids).logits.reshape(-1, VOCAB)


def test_gpt2_with_its_default_cache_o0_matches_pytorch():
    """torch.cat skips 1-D empty tensors (the cache's first keys): the
    importer drops them rather than emit a concat of a rank-1 operand at
    axis 2 (which failed to parse)."""
    torch.manual_seed(0)
    step = check_o0(DefaultLogits(gpt2()), OPTIMIZERS["sgd-momentum"], lm_batches(3))
    assert "train.concat" not in step.mlir


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_llama_o0_matches_pytorch(tied):
    """LlamaForCausalLM, untied with SGD-momentum, tied with AdamW: strictly
    within 1e-4 of PyTorch's loop (no bias, so no zero-gradient tensor)."""
    torch.manual_seed(0)
    model = Logits(llama(tied))
    step = check_o0(model, OPTIMIZERS["adamw" if tied else "sgd-momentum"], lm_batches(5),
                    envelope=False)
    # inv_freq is only read by the folded rotary tables: no argument of the step
    names = [a.name for a in step._imported.arguments]
    assert not any("inv_freq" in n for n in names), names
    assert "train.broadcast" in step.mlir  # key/value heads repeated in the step


class Classify(nn.Module):
    """A HuggingFace sequence classifier called with its tokenizer's
    attention_mask (int64 0 / 1, as a DataLoader of tokenized text gives),
    or, ``from_ids``, with the mask computed from the token ids in the
    model (pad id 0), as many training scripts write it."""

    def __init__(self, model: nn.Module, from_ids: bool = False):
        super().__init__()
        self.model = model
        self.from_ids = from_ids

    def forward(self, ids, attention_mask=None):
        if self.from_ids:
            attention_mask = (ids != 0).long()
        return self.model(ids, attention_mask=attention_mask).logits


def padded_batches(count: int, seed: int = 1):
    """(ids [BATCH, SEQ] padded with 0 after each row's length, the
    attention_mask, labels of 3 classes)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        lengths = torch.randint(4, SEQ + 1, (BATCH,), generator=g)
        mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
        ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g) * mask
        out.append((ids, mask, torch.randint(0, 3, (BATCH,), generator=g)))
    return out


@pytest.mark.parametrize("mask", ["from-ids", "input"])
def test_bert_with_padding_mask_o0_matches_pytorch(mask):
    """BertForSequenceClassification with a padding mask (rows of 4-32 real
    tokens). from-ids: the model computes it, ``(ids != 0).long()``: a
    comparison in the step (train.compare to i1, train.convert), HuggingFace's
    4-d mask built from it by indexing with aranges (a reshape and
    broadcast) and ``&`` with the folded bidirectional mask, and the scores
    the keep-mask of train.attention. input: the tokenizer's int64 attention_mask,
    which the model only turns into bool, so the step takes it as a mask
    (f32 0 / 1). Position and token-type ids are int buffers, folded.
    Against the f64 envelope: the key projections' biases are zero in exact
    arithmetic (their gradient is; BERT initializes them to zero), rounding
    noise in any f32 run."""
    from transformers import BertConfig, BertForSequenceClassification
    torch.manual_seed(0)
    model = Classify(BertForSequenceClassification(BertConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
        vocab_size=VOCAB, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, num_labels=3)), from_ids=mask == "from-ids")
    data = padded_batches(5)
    if mask == "from-ids":
        data = [(ids, y) for ids, _, y in data]
    step = check_o0(model, OPTIMIZERS["sgd-momentum"], data, envelope=True)
    if mask == "from-ids":
        assert "train.compare" in step.mlir
        assert any("train.attention" in line and " mask " in line
                   for line in step.mlir.splitlines())
        return
    argument = step._imported.arguments[1]
    assert argument.boolean and argument.from_integers
    # a bool mask is read the same way
    ids, attention, _ = data[0]
    assert torch.allclose(step.predict(ids, attention.bool()), step.predict(ids, attention))


class Buffers(nn.Module):
    """Registered buffers read in forward: a float positional table (a step
    op reads it: a frozen argument), a bool causal mask (non-persistent,
    folded), a scalar temperature; and a tensor constant made in forward
    (lifted by export)."""

    def __init__(self, vocab: int = 64, d: int = 32, seq: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.register_buffer("pos", torch.randn(seq, d) * 0.1)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).tril(),
                             persistent=False)
        self.register_buffer("temperature", torch.tensor(2.0))
        self.qkv = nn.Linear(d, 3 * d)
        self.head = nn.Linear(d, 10)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / self.temperature
        scores = scores.masked_fill(~self.mask, float("-inf"))
        h = h + torch.softmax(scores, dim=-1) @ v
        return self.head(h.mean(dim=1) * torch.tensor(0.5))


class FloatMasks(nn.Module):
    """Attention with float masks built from shapes: nn.Transformer's
    causal mask (0 / -inf, recognised as causal) and a sliding window of 4
    (-inf outside it: a constant with infinities)."""

    def __init__(self, vocab: int = 64, d: int = 32, seq: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.head = nn.Linear(d, 10)
        self.seq = seq

    def forward(self, tokens):
        q, k, v = self.qkv(self.embed(tokens)).chunk(3, dim=-1)
        causal = nn.Transformer.generate_square_subsequent_mask(self.seq)
        i = torch.arange(self.seq)
        window = torch.zeros(self.seq, self.seq).masked_fill(
            (i[None, :] > i[:, None]) | (i[:, None] - i[None, :] >= 4), float("-inf"))
        h = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        h = h + nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=window)
        return self.head(h.mean(dim=1))


def test_float_masks_from_shapes_o0_matches_pytorch():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randint(0, 64, (8, 16), generator=g), torch.randint(0, 10, (8,), generator=g))
            for _ in range(5)]
    step = check_o0(FloatMasks(), OPTIMIZERS["sgd-momentum"], data, envelope=True)
    assert step.mlir.count(" causal") == 1  # the window is added as a constant
    assert "0xFF800000" in step.mlir  # its -inf, as f32's bits


def test_registered_buffers_o0_matches_pytorch():
    torch.manual_seed(0)
    model = Buffers()
    g = torch.Generator().manual_seed(1)
    data = [(torch.randint(0, 64, (8, 16), generator=g), torch.randint(0, 10, (8,), generator=g))
            for _ in range(5)]
    # SGD: the key projection's bias gets an exactly-zero gradient (softmax
    # ignores a constant per row), which Adam would turn from rounding noise
    # into full steps in any f32 run (docs/Numerics.md).
    step = check_o0(model, OPTIMIZERS["sgd-momentum"], data)
    kinds = {a.name: a.kind for a in step._imported.arguments}
    assert kinds["pos"] == "frozen" and kinds["temperature"] == "frozen", kinds
    assert "mask" not in kinds  # computed at import
    state = step.state_dict()
    assert torch.equal(state["pos"], model.pos) and float(state["temperature"]) == 2.0


def test_explain_lists_no_blocking_node_for_the_modern_models():
    """amp.explain on each model of the parity set (in CI: the cheap ones)
    finds nothing that blocks compilation, and shows what was computed at
    import."""
    import timm
    import torchvision
    from transformers import BertConfig, BertForSequenceClassification
    images = (torch.randn(2, 3, 64, 64), torch.randint(0, 10, (2,)))
    bert = Classify(BertForSequenceClassification(BertConfig(
        num_hidden_layers=1, hidden_size=64, num_attention_heads=4, intermediate_size=128,
        vocab_size=VOCAB, max_position_embeddings=SEQ, num_labels=3)))
    cases = {
        "gpt2": (Logits(gpt2()), lm_batches(1)[0]),
        "llama": (Logits(llama(False)), lm_batches(1)[0]),
        "bert": (bert, padded_batches(1)[0]),
        "vit": (timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=4,
                                  num_classes=10), (images[0][:, :, :32, :32], images[1])),
        "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small(num_classes=10), images),
        "swin_t": (torchvision.models.swin_t(num_classes=10), images),
    }
    for name, (model, example) in cases.items():
        report = amp.explain(model, nn.CrossEntropyLoss(), example, opt_level="O1",
                             dtype=torch.bfloat16)
        assert report.compiles, (name, str(report))
    assert "computed at import" in str(amp.explain(Logits(gpt2()), nn.CrossEntropyLoss(),
                                                   lm_batches(1)[0]))


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("which", ["gpt2", "llama"])
def test_o1_loss_curve_follows_autocast(which, dtype):
    """O1 over 30 AdamW steps (lr 1e-3) against torch.autocast("cpu", dtype)
    (+ GradScaler for f16): the first loss within 1% of autocast's, the
    curve's mean distance from an f64 run at most 1.5x autocast's own (the
    torchvision O1 rule, docs/Numerics.md), the same loss scale at every
    step (measured: every loss within 3e-5 of autocast's)."""
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    torch.manual_seed(0)
    model = Logits(gpt2() if which == "gpt2" else llama(False))
    ref, exact = copy.deepcopy(model), copy.deepcopy(model)
    make = lambda p: torch.optim.AdamW(p, lr=1e-3)  # noqa: E731
    data = lm_batches(30)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=make(model.parameters()), opt_level="O1", dtype=torch_dtype)
    theirs = reference_losses(ref, make(ref.parameters()), data, dtype=torch_dtype)
    truth = f64_losses(exact, make, data)
    ours = []
    for batch, (_, scale) in zip(data, theirs):
        got = step(*batch)
        assert got.scale == scale
        ours.append(got.loss)
    assert abs(ours[0] - theirs[0][0]) <= 0.01 * theirs[0][0]
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    distance = mean([abs(a - t) for a, t in zip(ours, truth)])
    autocast = mean([abs(b - t) for (b, _), t in zip(theirs, truth)])
    assert distance <= 1.5 * autocast, (distance, autocast)
    if which == "llama":  # RMSNorm's .to(torch.float32): user casts, kept f32
        report = amp.explain(Logits(llama(False)), nn.CrossEntropyLoss(), data[0],
                             opt_level="O1", dtype=torch_dtype)
        casts = [t for n in report.nodes if n.module.endswith("layernorm")
                 for t in n.train_ops if t.reason == "user cast"]
        assert len(casts) == 8 and all(t.precision == "f32" for t in casts), casts
