"""Train a byte-level GPT-2 through amp.compile at O1-bf16, beside PyTorch's
own autocast-bf16 loop on the same batches.

HuggingFace's GPT2LMHeadModel in nanoGPT's CPU configuration (4 layers,
4 heads, hidden 128, context 64; no dropout), random-initialized, on the
fortunes Debian ships (the files of /usr/share/games/fortunes, as amp-run's
--dataset=text reads them; the last 10% of the bytes held out), batch 12,
AdamW lr 1e-3. Every --eval-every steps both models' validation loss is
measured on the same held-out windows; the unigram byte distribution of
the training text is the baseline to beat.

    PYTHONPATH=build/python $(scripts/setup.sh --print-python) \\
        examples/python/gpt2_bytes.py [--steps 3000] [--minutes 15] [--json out.json]

Needs the fortunes package (scripts/setup.sh installs it) and transformers
(pinned there).
"""

import argparse
import copy
import json
import math
import os
import time

import torch
import torch.nn as nn

import amp

FORTUNES = "/usr/share/games/fortunes"
CONTEXT, BATCH, VOCAB = 64, 12, 256


def read_text(path: str) -> bytes:
    """The fortunes: every regular, non-link, non-.dat file, sorted by name."""
    names = sorted(n for n in os.listdir(path)
                   if not n.endswith(".dat") and os.path.isfile(os.path.join(path, n))
                   and not os.path.islink(os.path.join(path, n)))
    return b"".join(open(os.path.join(path, n), "rb").read() for n in names)


class Logits(nn.Module):
    """The model as a loop calls it: logits of every position, flattened."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, use_cache=False).logits.reshape(-1, VOCAB)


def windows(data: torch.Tensor, count: int, generator: torch.Generator):
    """``count`` random (ids [BATCH, CONTEXT], next bytes [BATCH * CONTEXT])."""
    for _ in range(count):
        starts = torch.randint(0, len(data) - CONTEXT - 1, (BATCH,), generator=generator)
        rows = torch.stack([data[s:s + CONTEXT + 1] for s in starts.tolist()])
        yield rows[:, :-1].contiguous(), rows[:, 1:].reshape(-1).contiguous()


def unigram_loss(train: torch.Tensor, validation: torch.Tensor) -> float:
    """The cross entropy (nats) of the training bytes' unigram distribution
    (add-one smoothed) on the validation bytes."""
    counts = torch.bincount(train, minlength=VOCAB).double() + 1
    logp = (counts / counts.sum()).log()
    return -logp[validation].mean().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--minutes", type=float, default=15.0,
                        help="stop once the two loops together have run this long")
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--eval-batches", type=int, default=20)
    parser.add_argument("--json", help="write the curves and timings here")
    args = parser.parse_args()

    from transformers import GPT2Config, GPT2LMHeadModel
    text = torch.frombuffer(bytearray(read_text(FORTUNES)), dtype=torch.uint8).long()
    split = len(text) - len(text) // 10
    train, validation = text[:split], text[split:]
    baseline = unigram_loss(train, validation)

    torch.manual_seed(0)
    model = Logits(GPT2LMHeadModel(GPT2Config(
        vocab_size=VOCAB, n_positions=CONTEXT, n_embd=128, n_layer=4, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)))
    ref = copy.deepcopy(model)
    make = lambda p: torch.optim.AdamW(p, lr=1e-3)  # noqa: E731
    ref_opt = make(ref.parameters())
    held_out = list(windows(validation, args.eval_batches, torch.Generator().manual_seed(2)))
    batches = windows(train, args.steps, torch.Generator().manual_seed(1))
    first = next(windows(train, 1, torch.Generator().manual_seed(1)))

    start = time.perf_counter()
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=first,
                       optimizer=make(model.parameters()), opt_level="O1",
                       dtype=torch.bfloat16)
    compile_s = time.perf_counter() - start

    def evaluate() -> tuple:
        ours, theirs = [], []
        ref.eval()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            for ids, y in held_out:
                ours.append(nn.functional.cross_entropy(step.predict(ids), y).item())
                theirs.append(nn.functional.cross_entropy(ref(ids).float(), y).item())
        ref.train()
        return sum(ours) / len(ours), sum(theirs) / len(theirs)

    curve, times, evals = [], {"amp": [], "pytorch": []}, []
    began = time.perf_counter()
    for i, (ids, y) in enumerate(batches, start=1):
        t0 = time.perf_counter()
        ours = step(ids, y).loss
        t1 = time.perf_counter()
        ref_opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(ref(ids), y)
        loss.backward()
        ref_opt.step()
        t2 = time.perf_counter()
        times["amp"].append(t1 - t0)
        times["pytorch"].append(t2 - t1)
        curve.append((i, ours, loss.item()))
        last = i == args.steps or time.perf_counter() - began > 60 * args.minutes
        if i % args.eval_every == 0 or last:
            val = evaluate()
            evals.append((i, *val))
            print(f"step {i}: train {ours:.4f} (PyTorch {loss.item():.4f}), validation "
                  f"{val[0]:.4f} (PyTorch {val[1]:.4f}), unigram {baseline:.4f}", flush=True)
        if last:
            break

    def median(values):
        values = sorted(values[10:])  # after the first calls' warm-up
        return values[len(values) // 2]
    final = evals[-1]
    summary = {
        "steps": curve[-1][0], "compile_s": compile_s, "unigram": baseline,
        "validation_amp": final[1], "validation_pytorch": final[2],
        "below_unigram_amp": 1 - final[1] / baseline,
        "below_unigram_pytorch": 1 - final[2] / baseline,
        "step_ms_amp": 1e3 * median(times["amp"]),
        "step_ms_pytorch": 1e3 * median(times["pytorch"]),
        "mean_abs_train_loss_difference": sum(abs(a - b) for _, a, b in curve) / len(curve),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "curve": curve, "evals": evals}, f)
    if not math.isfinite(final[1]):
        raise SystemExit("amp's validation loss is not finite")


if __name__ == "__main__":
    main()
