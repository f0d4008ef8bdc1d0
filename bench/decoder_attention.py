"""A GPT-style decoder through amp.compile against PyTorch: step time and
training memory, with train.attention fused (the CPU runtime's flash-style
kernels) and decomposed (batch_matmul, softmax, batch_matmul).

The model is issue 39's: 6 pre-LN blocks, hidden 384, 6 heads, causal
F.scaled_dot_product_attention, GELU MLP (4x), tied LM head, vocabulary
512, AdamW; O1-bf16 (PyTorch: eager torch.autocast("cpu", bfloat16)).

Training memory (issue 39's definition): `base` is the process's RSS after
the model and optimizer are built; the kernel's RSS high-water mark
(VmHWM) is reset to the current RSS (/proc/self/clear_refs) after
amp.compile returns (PyTorch: before its first step), and read after the
timed steps; memory = VmHWM - base. Each configuration runs in a process of
its own.

    python bench/decoder_attention.py [--batch 8] [--seqs 256,512,1024]
        [--steps 5] [--threads 2]
        [--modes fused,decomposed,torch[,torch-compile,fused-budget0.5,fused-budget0.5-gemms]]
        [--model decoder|gpt2] [--vocab 512]

`--gemm-time` runs each configuration with ONEDNN_VERBOSE=1 (exec profiling) and
adds the time of the oneDNN GEMMs (matmul and inner-product primitives, the
kernels both sides share) per timed step: those over the batch's 4096
token rows (projections, MLP, head, their gradients) and the rest
(amp's attention blocks; PyTorch's SDPA calls none), and the step time
outside the first. The time of a call is its own wall time, so calls made
by two threads at once (amp's attention, threaded over batch x heads) add
up to more than the wall time they take; GEMMs elsewhere (f32 through
OpenBLAS or MKL, PyTorch's SDPA micro-kernels) are not counted.

A mode ending in `-unfused-head` passes lm_head="decomposed" (the [rows,
vocabulary] logits kept whole, for comparison with the fused LM head);
`--vocab 50257` is GPT-2's vocabulary, where the head dominates memory.

Prints a markdown table: median step time over the timed steps (after one
warm-up step), training memory, and the loss of the last step.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, HIDDEN, HEADS, LAYERS = 512, 384, 6, 6


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.fc = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.out = nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(HIDDEN, dim=2)
        q, k, v = (t.reshape(b, s, HEADS, HIDDEN // HEADS).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, HIDDEN))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, HIDDEN)
        nn.init.normal_(self.tok.weight, std=0.02)  # GPT-2's (a tied head)
        self.pos = nn.Parameter(torch.randn(seq, HIDDEN) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(HIDDEN)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos
        for block in self.blocks:
            x = block(x)
        logits = self.ln(x) @ self.tok.weight.t()  # tied head
        return logits.reshape(-1, VOCAB)


class GPT2(nn.Module):
    """HuggingFace's GPT2LMHeadModel at the decoder's sizes (6 layers,
    hidden 384, 6 heads, vocabulary 512, tied head; dropout 0, so its SDPA
    call has no dropout), returning [batch * seq, vocab] logits."""

    def __init__(self, seq):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel
        self.model = GPT2LMHeadModel(GPT2Config(
            vocab_size=VOCAB, n_positions=seq, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))

    def forward(self, tokens):
        return self.model(tokens, use_cache=False).logits.reshape(-1, VOCAB)


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def mark(what):
    """A line between oneDNN's verbose lines (C stdio, flushed first)."""
    if os.environ.get("ONEDNN_VERBOSE"):
        import ctypes
        ctypes.CDLL(None).fflush(None)
        print(what, flush=True)


def gemm_times(lines, rows):
    """Per timed step: (ms of GEMMs over `rows` token rows, ms of the
    rest) from oneDNN's profile_exec lines between the step marks."""
    steps, timed = [], False
    for line in lines:
        if line == "@@step-begin":
            steps.append([0.0, 0.0])
            timed = True
        elif line == "@@step-end":
            timed = False
        elif timed and line.startswith("onednn_verbose,"):
            fields = line.split(",")
            if "exec" not in fields[:5] or not ({"matmul", "inner_product"} & set(fields)):
                continue
            dims = fields[-2].replace(":", "x").split("x")
            steps[-1][0 if str(rows) in dims else 1] += float(fields[-1])
    return steps


def child(mode, batch, seq, steps, threads, model_name="decoder"):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT2(seq) if model_name == "gpt2" else Decoder(seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randint(0, VOCAB, (batch, seq), generator=g),
             torch.randint(0, VOCAB, (batch * seq,), generator=g)) for _ in range(steps + 1)]
    base = rss_kib("VmRSS")
    times, loss = [], None
    if mode in ("torch", "torch-compile"):
        if mode == "torch-compile":
            model = torch.compile(model)
        reset_peak()
        for i, (tokens, labels) in enumerate(data):
            if i:
                mark("@@step-begin")
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                value = F.cross_entropy(model(tokens), labels)
            value.backward()
            opt.step()
            opt.zero_grad()
            loss = value.item()
            times.append(time.perf_counter() - start)
            if i:
                mark("@@step-end")
    else:
        import amp
        start = time.perf_counter()
        lm_head = "fused"
        if mode.endswith("-unfused-head"):
            mode, lm_head = mode[:-len("-unfused-head")], "decomposed"
        attention, _, budget = mode.partition("-budget")
        budget, gemms, _ = budget.partition("-gemms")
        step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0], optimizer=opt,
                           opt_level="O1", dtype=torch.bfloat16, attention=attention,
                           memory_budget=float(budget) if budget else None,
                           recompute_gemms=bool(gemms), lm_head=lm_head)
        amp.set_num_threads(threads)
        reset_peak()
        for i, batch_data in enumerate(data):
            if i:
                mark("@@step-begin")
            start = time.perf_counter()
            loss = step(*batch_data).loss
            times.append(time.perf_counter() - start)
            if i:
                mark("@@step-end")
    peak = rss_kib("VmHWM")
    return {"median_ms": 1000 * statistics.median(times[1:]),
            "memory_mib": (peak - base) / 1024, "loss": loss}


def main():
    global VOCAB
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seqs", default="256,512,1024")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--modes", default="fused,decomposed,torch")
    parser.add_argument("--model", default="decoder", choices=["decoder", "gpt2"],
                        help="the decoder above, or HuggingFace's GPT-2 at its sizes")
    parser.add_argument("--vocab", type=int, default=512,
                        help="the vocabulary (issue 39's decoder: 512; GPT-2: 50257)")
    parser.add_argument("--gemm-time", action="store_true",
                        help="add the oneDNN GEMM time per step (ONEDNN_VERBOSE=1)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    VOCAB = args.vocab
    if args.child:
        mode, seq = args.child.split(":")
        print(json.dumps(child(mode, args.batch, int(seq), args.steps, args.threads,
                               args.model)))
        return
    print(f"{args.model}, vocabulary {args.vocab}; CPU: {cpu_name()}, {args.threads} threads, batch {args.batch}, "
          f"{args.steps} timed steps (median)")
    if args.gemm_time:
        print("| seq | form | step ms | training memory MiB | last loss | oneDNN GEMMs over "
              "the token rows ms | other oneDNN GEMMs ms | step outside the first ms |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("| seq | form | step ms | training memory MiB | last loss |")
        print("|---|---|---|---|---|")
    for seq in (int(s) for s in args.seqs.split(",")):
        for mode in args.modes.split(","):
            env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
            if args.gemm_time:
                env.update(ONEDNN_VERBOSE="1")  # v2 (the system's) and v3 (PyTorch's): exec lines
            out = subprocess.run([sys.executable, __file__, "--child", f"{mode}:{seq}",
                                  "--batch", str(args.batch), "--steps", str(args.steps),
                                  "--threads", str(args.threads), "--model", args.model,
                                  "--vocab", str(args.vocab)],
                                 capture_output=True, text=True, env=env)
            if out.returncode != 0:
                print(f"| {seq} | {mode} | failed: {out.stderr.strip().splitlines()[-1]} | | |")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            unfused_head = mode.endswith("-unfused-head")
            mode = mode[:-len("-unfused-head")] if unfused_head else mode
            name = {"fused": "amp, fused attention", "decomposed": "amp, decomposed attention",
                    "torch": "PyTorch eager autocast-bf16 (SDPA)",
                    "torch-compile": "PyTorch torch.compile autocast-bf16"}.get(mode)
            if name is None:  # fused-budget0.5[-gemms]: memory_budget=0.5
                attention, _, budget = mode.partition("-budget")
                budget, gemms, _ = budget.partition("-gemms")
                name = (f"amp, {attention} attention, memory_budget={budget}"
                        + (", recompute_gemms" if gemms else ""))
            if unfused_head:
                name += ", unfused LM head"
            row = (f"| {seq} | {name} | {r['median_ms']:.0f} | {r['memory_mib']:.0f} | "
                   f"{r['loss']:.4f} |")
            if args.gemm_time:
                gemms = gemm_times(out.stdout.splitlines(), args.batch * seq)
                rows = statistics.median(g[0] for g in gemms) if gemms else float("nan")
                rest = statistics.median(g[1] for g in gemms) if gemms else float("nan")
                row += f" {rows:.0f} | {rest:.0f} | {r['median_ms'] - rows:.0f} |"
            print(row, flush=True)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
