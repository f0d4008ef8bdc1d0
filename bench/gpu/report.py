#!/usr/bin/env python3
"""Tables and a plot from a bench/gpu/run.sh output directory.

  report.py OUT

Reads OUT/env.json, OUT/ours/*.json (amp-train --bench-steps metrics),
OUT/torch.jsonl (torch_models.py) and OUT/roofline.json, whichever exist,
and writes OUT/report.md (the tables docs/benchmarks.md quotes: step time,
steps/s and peak memory per model and configuration, the targets, the
roofline and GEMM efficiency) and OUT/vgg16.svg (step time by batch size).
Step times are medians over the timed steps of one process each; amp's
memory is its allocator's peak in use, PyTorch's max_memory_allocated.
"""
import glob
import json
import os
import sys

OURS = ["O0-f32", "O1-f16", "O2-f16", "O1-bf16"]
TORCH = ["fp32", "amp-f16", "amp-bf16", "compile-amp-f16"]


def load(out):
    ours, torch = {}, {}
    for path in glob.glob(os.path.join(out, "ours", "*.json")):
        name = os.path.basename(path)[:-5]
        model, cfg = name.rsplit("-", 2)[0], "-".join(name.rsplit("-", 2)[1:])
        ours[(model, cfg)] = json.load(open(path))
    path = os.path.join(out, "torch.jsonl")
    if os.path.exists(path):
        for line in open(path):
            r = json.loads(line)
            model = r["model"] if r["model"] != "vgg16" else f"vgg16-b{r['batch']}"
            torch[(model, r["mode"])] = r
    extra = {}
    for name in ("env", "roofline"):
        p = os.path.join(out, name + ".json")
        extra[name] = json.load(open(p)) if os.path.exists(p) else None
    return ours, torch, extra


def mib(v):
    return "-" if v is None else f"{v / 2**20:.0f}"


def ms(r):
    if r is None:
        return None
    return r.get("step_ms_median")


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def model_order(models):
    def key(m):
        return (m.startswith("vgg16"), int(m.split("-b")[1]) if m.startswith("vgg16-b") else 0, m)
    return sorted(models, key=key)


def step_table(ours, torch, models):
    lines = ["| model | implementation | config | median step (ms) | steps/s | peak memory (MiB) |",
             "|---|---|---|---:|---:|---:|"]
    for m in models:
        for cfg in OURS:
            r = ours.get((m, cfg))
            if r:
                lines.append(f"| {m} | amp | {cfg} | {fmt(ms(r), '.3f')} | {fmt(r.get('steps_per_s'), '.1f')} | "
                             f"{mib(r.get('peak_bytes_in_use'))} |")
        for mode in TORCH:
            r = torch.get((m, mode))
            if r and "error" in r:
                lines.append(f"| {m} | PyTorch | {mode} | {r['error']} | | |")
            elif r:
                lines.append(f"| {m} | PyTorch {r.get('torch', '')} | {mode} | {fmt(ms(r), '.3f')} | "
                             f"{fmt(r.get('steps_per_s'), '.1f')} | {mib(r.get('peak_bytes_allocated'))} |")
    return lines


def targets(ours, torch, models):
    lines = ["| model | amp O1-f16 vs PyTorch eager AMP (target >= 1.5x) | vs torch.compile AMP (>= 1.1x) | "
             "peak memory amp / PyTorch AMP (<= 1) |", "|---|---:|---:|---:|"]
    for m in models:
        o = ours.get((m, "O1-f16"))
        e, c = torch.get((m, "amp-f16")), torch.get((m, "compile-amp-f16"))
        if not o:
            continue

        def ratio(t):
            return None if not t or not ms(t) else ms(t) / ms(o)

        def verdict(v, goal):
            return "-" if v is None else f"{v:.2f}x {'met' if v >= goal else 'not met'}"
        mem = None
        if e and o.get("peak_bytes_in_use") and e.get("peak_bytes_allocated"):
            mem = o["peak_bytes_in_use"] / e["peak_bytes_allocated"]
        memtext = "-" if mem is None else f"{mem:.2f} {'met' if mem <= 1 else 'not met'}"
        lines.append(f"| {m} | {verdict(ratio(e), 1.5)} | {verdict(ratio(c), 1.1)} | {memtext} |")
    return lines


def roofline_tables(ours, roof, models):
    if not roof:
        return []
    p = roof["peaks"]
    lines = [f"Measured peaks ({roof['device']}, the last run; each model's floor uses its own run's): "
             + ", ".join(f"{k} {v:.1f}" for k, v in p.items() if k != "gemm_n")
             + f" (GEMM {p['gemm_n']}^3)", "",
             "| model | GEMM GFLOP/step | min bytes/step (MB) | floor (ms) | amp O1-f16 (ms) | fraction of floor |",
             "|---|---:|---:|---:|---:|---:|"]
    for m in models:
        c = roof["models"].get(m)
        if not c:
            continue
        mp = c.get("peaks", p)  # the peaks measured in the model's own run
        peak = mp.get("gemm_f16_tflops") or mp.get("gemm_bf16_tflops")
        floor = None
        if c["gemm_flops"] is not None and peak:
            floor = max(c["gemm_flops"] / (peak * 1e9), c["min_bytes"] / (mp["copy_gb_per_s"] * 1e6))
        o = ms(ours.get((m, "O1-f16")))
        frac = floor / o if floor and o else None
        gf = None if c["gemm_flops"] is None else c["gemm_flops"] / 1e9
        lines.append(f"| {m} | {fmt(gf, '.1f')} | {c['min_bytes'] / 1e6:.1f} | {fmt(floor, '.3f')} | "
                     f"{fmt(o, '.3f')} | {fmt(frac, '.2f')} |")
    for m, rows in roof.get("gemms", {}).items():
        lines += ["", f"GEMMs of {m} (amp O1-f16 under AMP_CUDA_GEMM_PROFILE vs cuBLASLt through torch):", "",
                  "| batch x m x n x k | ta tb | types | epilogue | calls | amp (ms) | direct (ms) | amp TFLOP/s | efficiency |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|"]
        for g in rows:
            lines.append(f"| {g['batch']}x{g['m']}x{g['n']}x{g['k']} | {g['transpose_a']} {g['transpose_b']} | "
                         f"{g['dtype_ab']}->{g['dtype_d']} | {g['epilogue']} | {g['calls']} | {g['median_ms']:.4f} | "
                         f"{g['torch_ms']:.4f} | {fmt(g['ours_tflops'], '.1f')} | {fmt(g['efficiency'], '.2f')} |")
    return lines


def svg_plot(series, path, title):
    """Step time (ms, log scale) by batch (log2), one line per series."""
    import math
    pts = [(b, t) for s in series.values() for b, t in s]
    if not pts:
        return False
    w, h, l, r, top, bot = 640, 400, 70, 170, 40, 50
    bs = sorted({b for b, _ in pts})
    tmin, tmax = min(t for _, t in pts), max(t for _, t in pts)
    lo, hi = math.log10(tmin) - 0.05, math.log10(tmax) + 0.05

    def x(b):
        return l + (0 if len(bs) == 1 else (math.log2(b) - math.log2(bs[0])) / (math.log2(bs[-1]) - math.log2(bs[0])) * (w - l - r))

    def y(t):
        return top + (hi - math.log10(t)) / (hi - lo) * (h - top - bot)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
         f'<line x1="{l}" y1="{h - bot}" x2="{w - r}" y2="{h - bot}" stroke="black"/>',
         f'<line x1="{l}" y1="{top}" x2="{l}" y2="{h - bot}" stroke="black"/>',
         f'<text x="{(l + w - r) / 2}" y="{h - 10}" text-anchor="middle">batch size</text>',
         f'<text x="15" y="{(top + h - bot) / 2}" transform="rotate(-90 15 {(top + h - bot) / 2})" text-anchor="middle">median step (ms)</text>']
    for b in bs:
        o.append(f'<text x="{x(b):.1f}" y="{h - bot + 15}" text-anchor="middle">{b}</text>')
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5):
            t = m * 10 ** e
            if lo <= math.log10(t) <= hi:
                o.append(f'<text x="{l - 5}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
                o.append(f'<line x1="{l}" y1="{y(t):.1f}" x2="{w - r}" y2="{y(t):.1f}" stroke="#ddd"/>')
    for i, (name, s) in enumerate(series.items()):
        c = colors[i % len(colors)]
        s = sorted(s)
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
                 + " ".join(f"{x(b):.1f},{y(t):.1f}" for b, t in s) + '"/>')
        o.append(f'<text x="{w - r + 10}" y="{top + 16 * i + 10}" fill="{c}">{name}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: report.py OUT")
    out = sys.argv[1]
    ours, torch, extra = load(out)
    models = model_order({m for m, _ in list(ours) + list(torch)})
    env = extra["env"] or {}
    lines = ["# GPU training benchmark", "",
             f"Device: {env.get('gpu', '?')} (driver {env.get('driver', '?')}), PyTorch {env.get('torch', '?')} "
             f"(CUDA {env.get('torch_cuda', '?')}). Medians over the timed steps; one fixed batch on the device; "
             "each step ends with one host sync; no CUDA graphs.", ""]
    lines += step_table(ours, torch, models) + [""]
    lines += ["Targets (amp O1-f16 steps/s over PyTorch's; memory: amp's peak in use over PyTorch AMP's "
              "max_memory_allocated):", ""] + targets(ours, torch, models) + [""]
    lines += roofline_tables(ours, extra["roofline"], models)
    series = {}
    for (m, cfg), r in list(ours.items()):
        if m.startswith("vgg16-b") and ms(r):
            series.setdefault(f"amp {cfg}", []).append((int(m.split("-b")[1]), ms(r)))
    for (m, mode), r in torch.items():
        if m.startswith("vgg16-b") and ms(r):
            series.setdefault(f"torch {mode}", []).append((int(m.split("-b")[1]), ms(r)))
    if svg_plot(series, os.path.join(out, "vgg16.svg"), "VGG16-CIFAR training step by batch size"):
        lines += ["", "![VGG16 step time by batch size](vgg16.svg)"]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
