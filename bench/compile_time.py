#!/usr/bin/env python3
"""Compile-time scaling of amp on generated deep MLPs (bench/gen_model.py).

  bench/compile_time.py [--repeats 5] [--layers 10,100,1000,10000]
                        [--lower-layers 10,30,100,300,1000,3000]
                        [--compile-layers 10,100,1000]
  bench/compile_time.py --bracket 1000,10000 [--rounds 2]

For each depth: the median wall time and peak RSS over --repeats runs of
  parse       amp-opt MODEL -o /dev/null            (the baseline: parse + print)
  pipeline    amp-opt MODEL --amp-pipeline          (autocast, autodiff, Adam, loss scaling, cleanup)
  lower       amp-opt MODEL --amp-pipeline --amp-lower-cpu   (to the LLVM dialect; --lower-layers),
              with the verifier after each pass as amp-opt runs by default,
              and without it (--verify-each=false: amp-compile's default,
              which verifies the lowered module once)
  compile     amp-compile MODEL (no cache) --time-phases: the whole compile to a
              shared object, and its LLVM part (entry inlining, glue and split,
              then LLVM optimization and machine code; --compile-layers). amp-compile lowers the step and
              the evaluation function only (amp-opt's lower also the forward
              and gradient functions)
and train ops per second of the train-level passes: input train ops over the
passes' own time (--mlir-timing's rows for the five passes, the median over
--repeats runs; with the verifier after each pass as amp-opt runs by default,
and without it: --verify-each=false).
Writes bench/results/compile_time.{json,md,svg}. The MLPs are 64 wide, batch
32: compile time does not depend on tensor sizes.

--bracket SMALL,LARGE measures the linear-growth target of the lowering
(amp-pipeline + amp-lower-cpu) against the machine's drift: it alternates
SMALL, LARGE, SMALL, ... (--rounds LARGE runs, each between two SMALL ones)
and divides each LARGE run by the geometric mean of its two neighbours, in
wall and in CPU (user + system) seconds; writes
bench/results/compile_ratio.{json,md}.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPT = os.path.join(ROOT, "build", "bin", "amp-opt")
COMPILE = os.path.join(ROOT, "build", "bin", "amp-compile")
OUT = os.path.join(ROOT, "bench", "results")


def run(cmd, cpu=False):
    """Wall seconds and peak RSS (MiB) of one run of `cmd` (and its user +
    system CPU seconds when `cpu`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    if cpu:
        return wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024.0


def lower_cmd(path):
    """The measured lowering of a model: amp-pipeline, then amp-lower-cpu."""
    return [OPT, path, "--amp-pipeline", "--amp-lower-cpu", "-o", "/dev/null"]


def generate(n, path):
    """Writes the n-layer MLP to `path`; returns its train-op count."""
    text = subprocess.check_output([sys.executable, os.path.join(ROOT, "bench", "gen_model.py"), "mlp",
                                    "--layers", str(n), "--width", "64", "--batch", "32"], text=True)
    open(path, "w").write(text)
    return int(re.search(r": (\d+) train ops", text).group(1))


def bracket(small, large, rounds):
    """The lowering's growth from `small` to `large` layers, each large run
    against the geometric mean of the small runs either side of it."""
    paths = {n: os.path.join(OUT, f"compile_ratio_{n}.mlir") for n in (small, large)}
    ops = {n: generate(n, paths[n]) for n in (small, large)}
    runs = []
    for i in range(2 * rounds + 1):
        n = small if i % 2 == 0 else large
        wall, mib, cpu = run(lower_cmd(paths[n]), cpu=True)
        runs.append({"layers": n, "wall_s": wall, "cpu_s": cpu, "mib": mib})
        print(json.dumps(runs[-1]), flush=True)
    for path in paths.values():
        os.remove(path)
    ratios = []
    for i in range(1, 2 * rounds, 2):
        before, big, after = runs[i - 1], runs[i], runs[i + 1]
        ratios.append({key: big[key] / (before[key] * after[key]) ** 0.5 for key in ("wall_s", "cpu_s")})
    result = {"small": small, "large": large, "ops_ratio": ops[large] / ops[small],
              "runs": runs, "ratios": ratios,
              "median_wall_ratio": statistics.median(r["wall_s"] for r in ratios),
              "median_cpu_ratio": statistics.median(r["cpu_s"] for r in ratios)}
    json.dump(result, open(os.path.join(OUT, "compile_ratio.json"), "w"), indent=2)
    lines = [f"Lowering (amp-pipeline + amp-lower-cpu), {small} vs {large} layers "
             f"({result['ops_ratio']:.0f}x the train ops), runs in this order:", "",
             "| run | layers | wall s | CPU s | peak MiB |", "|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(runs):
        lines.append(f"| {i + 1} | {r['layers']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['mib']:.0f} |")
    lines += ["", "| large run | wall ratio | CPU ratio |", "|---:|---:|---:|"]
    for i, r in enumerate(ratios):
        lines.append(f"| {2 * i + 2} | {r['wall_s']:.2f}x | {r['cpu_s']:.2f}x |")
    lines.append(f"| median | {result['median_wall_ratio']:.2f}x | {result['median_cpu_ratio']:.2f}x |")
    open(os.path.join(OUT, "compile_ratio.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


def measure(cmd, repeats):
    runs = [run(cmd) for _ in range(repeats)]
    return statistics.median(w for w, _ in runs), max(m for _, m in runs)


# A row of --mlir-timing: user time and wall time (multithreaded contexts)
# or wall time alone; the last figure before the pass name is its wall time.
PASS_ROW = re.compile(r"^\s+(?:[\d.]+ \(\s*[\d.]+%\)\s+)?([\d.]+) \(\s*[\d.]+%\)\s+(\w+Pass)$")


def pass_seconds(cmd, repeats):
    """Median over `repeats` runs of the summed --mlir-timing pass rows."""
    totals = []
    for _ in range(repeats):
        err = subprocess.run(cmd + ["--mlir-timing"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, check=True).stderr
        totals.append(sum(float(m.group(1)) for m in map(PASS_ROW.match, err.splitlines()) if m))
    return statistics.median(totals)


PHASE_ROW = re.compile(r"^amp-compile: ([\w -]+): ([\d.]+) s$")
LLVM_PHASES = ("split", "LLVM optimization and machine code")


def compile_seconds(path, repeats):
    """Medians over `repeats` cold amp-compile runs: (whole compile wall s,
    its LLVM part s, peak MiB)."""
    wholes, llvms, mibs = [], [], []
    env = dict(os.environ, AMP_CACHE="0")
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.Popen([COMPILE, path, "--time-phases", "-o", path + ".so"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wholes.append(time.perf_counter() - start)
        if status != 0:
            sys.exit(f"amp-compile failed on {path}:\n{err}")
        phases = {m.group(1): float(m.group(2)) for m in map(PHASE_ROW.match, err.splitlines()) if m}
        llvms.append(sum(phases[p] for p in LLVM_PHASES))
        mibs.append(usage.ru_maxrss / 1024.0)
        os.remove(path + ".so")
    return statistics.median(wholes), statistics.median(llvms), max(mibs)


def svg(rows):
    """Log-log plot of seconds against train ops, one line per stage."""
    import math
    w, h, pad = 560, 360, 60
    pts = [(r["ops"], r[k]) for r in rows for k in ("pipeline_s", "lower_s") if r.get(k)]
    xs = [math.log10(p[0]) for p in pts]
    ys = [math.log10(max(p[1], 1e-3)) for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    sx = lambda x: pad + (math.log10(x) - x0) / max(x1 - x0, 1e-9) * (w - 2 * pad)
    sy = lambda y: h - pad - (math.log10(max(y, 1e-3)) - y0) / max(y1 - y0, 1e-9) * (h - 2 * pad)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{w/2}" y="20" text-anchor="middle">amp-opt compile time vs train ops (log-log)</text>',
           f'<line x1="{pad}" y1="{h-pad}" x2="{w-pad}" y2="{h-pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h-pad}" stroke="black"/>',
           f'<text x="{w/2}" y="{h-20}" text-anchor="middle">train ops in the model</text>',
           f'<text x="15" y="{h/2}" transform="rotate(-90 15 {h/2})" text-anchor="middle">seconds</text>']
    for key, color in (("pipeline_s", "#1f77b4"), ("lower_s", "#d62728")):
        line = [(sx(r["ops"]), sy(r[key])) for r in rows if r.get(key)]
        if len(line) > 1:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                       % (color, " ".join(f"{x:.1f},{y:.1f}" for x, y in line)))
        for (x, y), r in zip(line, [r for r in rows if r.get(key)]):
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
            out.append(f'<text x="{x+5:.1f}" y="{y-5:.1f}" fill="{color}">{r[key]:.2f}s</text>')
    out.append(f'<text x="{w-pad}" y="{pad}" text-anchor="end" fill="#1f77b4">amp-pipeline</text>')
    out.append(f'<text x="{w-pad}" y="{pad+16}" text-anchor="end" fill="#d62728">+ amp-lower-cpu</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--layers", default="10,100,1000,10000")
    parser.add_argument("--lower-layers", default="10,30,100,300,1000,3000")
    parser.add_argument("--compile-layers", default="10,100,1000")
    parser.add_argument("--bracket", help="SMALL,LARGE: the lowering's growth, drift-bracketed")
    parser.add_argument("--rounds", type=int, default=2)
    a = parser.parse_args()
    if not os.access(OPT, os.X_OK):
        sys.exit("build first: ninja -C build")
    os.makedirs(OUT, exist_ok=True)
    if a.bracket:
        small, large = (int(x) for x in a.bracket.split(","))
        return bracket(small, large, a.rounds)
    depths = sorted({int(x) for x in a.layers.split(",")} | {int(x) for x in a.lower_layers.split(",")}
                    | {int(x) for x in a.compile_layers.split(",")})
    lower = {int(x) for x in a.lower_layers.split(",")}
    whole = {int(x) for x in a.compile_layers.split(",")}
    rows = []
    tmp = os.path.join(OUT, "compile_time_model.mlir")
    for n in depths:
        ops = generate(n, tmp)
        row = {"layers": n, "ops": ops}
        row["parse_s"], row["parse_mib"] = measure([OPT, tmp, "-o", "/dev/null"], a.repeats)
        if n in {int(x) for x in a.layers.split(",")}:
            row["pipeline_s"], row["pipeline_mib"] = measure([OPT, tmp, "--amp-pipeline", "-o", "/dev/null"], a.repeats)
            cmd = [OPT, tmp, "--amp-pipeline", "-o", "/dev/null"]
            row["passes_s"] = pass_seconds(cmd, a.repeats)
            row["passes_noverify_s"] = pass_seconds(cmd + ["--verify-each=false"], a.repeats)
            row["ops_per_s"] = ops / max(row["passes_s"], 1e-9)
            row["ops_per_s_noverify"] = ops / max(row["passes_noverify_s"], 1e-9)
        if n in lower:
            reps = a.repeats if n <= 100 else 1
            row["lower_s"], row["lower_mib"] = measure(lower_cmd(tmp), reps)
            row["lower_noverify_s"], _ = measure(lower_cmd(tmp) + ["--verify-each=false"], reps)
            row["lower_repeats"] = reps
        if n in whole:
            reps = a.repeats if n <= 100 else 3
            row["compile_s"], row["llvm_s"], row["compile_mib"] = compile_seconds(tmp, reps)
            row["compile_repeats"] = reps
        rows.append(row)
        print(json.dumps(row), flush=True)
    os.remove(tmp)
    json.dump({"machine": os.uname().machine, "cpus": os.cpu_count(), "rows": rows},
              open(os.path.join(OUT, "compile_time.json"), "w"), indent=2)
    lines = ["| layers | train ops | parse s | amp-pipeline s (MiB) | passes s | ops/s | "
             "passes s, no verify-each | ops/s | + amp-lower-cpu s (MiB) | "
             "the same, no verify-each s | amp-compile s (MiB) | of which LLVM s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p = f"{r['pipeline_s']:.3f} ({r['pipeline_mib']:.0f})" if "pipeline_s" in r else "-"
        ps = f"{r['passes_s']:.3f}" if "passes_s" in r else "-"
        o = f"{r['ops_per_s']:,.0f}" if "ops_per_s" in r else "-"
        pn = f"{r['passes_noverify_s']:.3f}" if "passes_noverify_s" in r else "-"
        on = f"{r['ops_per_s_noverify']:,.0f}" if "ops_per_s_noverify" in r else "-"
        l = f"{r['lower_s']:.2f} ({r['lower_mib']:.0f})" if "lower_s" in r else "-"
        ln = f"{r['lower_noverify_s']:.2f}" if "lower_noverify_s" in r else "-"
        c = f"{r['compile_s']:.2f} ({r['compile_mib']:.0f})" if "compile_s" in r else "-"
        v = f"{r['llvm_s']:.2f}" if "llvm_s" in r else "-"
        lines.append(f"| {r['layers']} | {r['ops']} | {r['parse_s']:.3f} | {p} | {ps} | {o} | {pn} | {on} | {l} "
                     f"| {ln} | {c} | {v} |")
    open(os.path.join(OUT, "compile_time.md"), "w").write("\n".join(lines) + "\n")
    open(os.path.join(OUT, "compile_time.svg"), "w").write(svg(rows))
    print("\n".join(lines))


main()
