#!/usr/bin/env python3
"""Generates train-dialect models of any size (benchmarks, stress tests).

  gen_model.py mlp --layers N [--width W] [--batch B] [--inputs I] [--classes C]
  gen_model.py transformer --blocks N [--d D] [--heads H] [--seq S] [--batch B] [--vocab V]
  gen_model.py vgg16 [--batch B]

mlp: N linear layers (matmul with bias + ReLU; the last without ReLU) from
I inputs through width W to C classes, cross-entropy loss, nn.Linear's
default init. transformer: token + position embeddings, N pre-LN blocks
(layer_norm, Q/K/V projections, causal softmax attention over H heads,
output projection, residual; layer_norm, GELU MLP d-4d-d, residual), a
final layer_norm and an LM head with cross-entropy (examples/
transformer_block.mlir is --blocks 1 --d 256 --heads 4 --seq 128 --batch 8
--vocab 1024). vgg16: VGG16 with batch norm on CIFAR-10-shaped inputs, as
examples/vgg16_cifar.mlir (which is --batch 128). Writes the model to stdout; the first line is a comment with
the command and the number of train ops.
"""
import argparse
import sys


def t(*shape, ty="f32"):
    return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + ty + ">"


def mlp(a):
    params, body = [], []
    dims = [a.inputs] + [a.width] * (a.layers - 1) + [a.classes]
    x = "%x"
    for i in range(a.layers):
        fin, fout = dims[i], dims[i + 1]
        params.append(f"%w{i}: {t(fin, fout)} {{train.param, train.init = #train.init<fan_in_uniform>}}")
        params.append(f"%b{i}: {t(fout)} {{train.param, train.init = #train.init<fan_in_uniform(fan_in = {fin})>}}")
        body.append(f"  %h{i} = train.matmul {x}, %w{i}, %b{i} : {t(a.batch, fin)}, {t(fin, fout)}, {t(fout)} -> {t(a.batch, fout)}")
        x = f"%h{i}"
        if i + 1 < a.layers:
            body.append(f"  %a{i} = train.relu %h{i} : {t(a.batch, fout)}")
            x = f"%a{i}"
    body.append(f"  %loss = train.cross_entropy {x}, %labels : {t(a.batch, a.classes)}, {t(a.batch, ty='i32')} -> {t()}")
    args = [f"%x: {t(a.batch, a.inputs)}", f"%labels: {t(a.batch, ty='i32')}"] + params
    return args, body


def transformer(a):
    d, h, s, b, v = a.d, a.heads, a.seq, a.batch, a.vocab
    hd, rows, bh = d // h, b * s, b * h
    assert d % h == 0, "--d must be a multiple of --heads"
    normal = "{train.param, train.init = #train.init<normal(0.02)>}"
    ones = "{train.param, train.init = #train.init<ones>}"
    zeros = "{train.param, train.init = #train.init<zeros>}"
    args = [f"%tokens: {t(b, s, ty='i32')}", f"%labels: {t(rows, ty='i32')}",
            f"%tok_emb: {t(v, d)} {normal}", f"%pos_emb: {t(s, d)} {normal}"]
    body = [f"  %te = train.embedding %tok_emb, %tokens : {t(v, d)}, {t(b, s, ty='i32')} -> {t(b, s, d)}",
            f"  %e = train.add %te, %pos_emb : {t(b, s, d)}, {t(s, d)} -> {t(b, s, d)}",
            f"  %x0 = train.reshape %e : {t(b, s, d)} -> {t(rows, d)}",
            f"  %scale = train.constant dense<{1.0 / hd ** 0.5}> : {t()}"]
    A = t(rows, d)
    for n in range(a.blocks):
        p = f"l{n}_"
        for name, shape, init in [("ln1_g", (d,), ones), ("ln1_b", (d,), zeros),
                                  ("wq", (d, d), normal), ("bq", (d,), zeros),
                                  ("wk", (d, d), normal), ("bk", (d,), zeros),
                                  ("wv", (d, d), normal), ("bv", (d,), zeros),
                                  ("wo", (d, d), normal), ("bo", (d,), zeros),
                                  ("ln2_g", (d,), ones), ("ln2_b", (d,), zeros),
                                  ("w1", (d, 4 * d), normal), ("b1", (4 * d,), zeros),
                                  ("w2", (4 * d, d), normal), ("b2", (d,), zeros)]:
            args.append(f"%{p}{name}: {t(*shape)} {init}")
        x = f"%x{n}"
        body += [f"  %{p}ln1 = train.layer_norm {x}, %{p}ln1_g, %{p}ln1_b : {A}, {t(d)}"]
        for w in "qkv":
            body += [
                f"  %{p}{w}1 = train.matmul %{p}ln1, %{p}w{w}, %{p}b{w} : {A}, {t(d, d)}, {t(d)} -> {A}",
                f"  %{p}{w}2 = train.reshape %{p}{w}1 : {A} -> {t(b, s, h, hd)}",
                f"  %{p}{w}3 = train.transpose %{p}{w}2 permutation [0, 2, 1, 3] : {t(b, s, h, hd)} -> {t(b, h, s, hd)}",
                f"  %{p}{w} = train.reshape %{p}{w}3 : {t(b, h, s, hd)} -> {t(bh, s, hd)}"]
        body += [
            f"  %{p}s0 = train.batch_matmul %{p}q, %{p}k transpose_rhs : {t(bh, s, hd)}, {t(bh, s, hd)} -> {t(bh, s, s)}",
            f"  %{p}s1 = train.mul %{p}s0, %scale : {t(bh, s, s)}, {t()} -> {t(bh, s, s)}",
            f"  %{p}p = train.softmax %{p}s1 axis 2 causal : {t(bh, s, s)}",
            f"  %{p}c0 = train.batch_matmul %{p}p, %{p}v : {t(bh, s, s)}, {t(bh, s, hd)} -> {t(bh, s, hd)}",
            f"  %{p}c1 = train.reshape %{p}c0 : {t(bh, s, hd)} -> {t(b, h, s, hd)}",
            f"  %{p}c2 = train.transpose %{p}c1 permutation [0, 2, 1, 3] : {t(b, h, s, hd)} -> {t(b, s, h, hd)}",
            f"  %{p}c = train.reshape %{p}c2 : {t(b, s, h, hd)} -> {A}",
            f"  %{p}o = train.matmul %{p}c, %{p}wo, %{p}bo : {A}, {t(d, d)}, {t(d)} -> {A}",
            f"  %{p}r1 = train.add {x}, %{p}o : {A}, {A} -> {A}",
            f"  %{p}ln2 = train.layer_norm %{p}r1, %{p}ln2_g, %{p}ln2_b : {A}, {t(d)}",
            f"  %{p}m1 = train.matmul %{p}ln2, %{p}w1, %{p}b1 : {A}, {t(d, 4 * d)}, {t(4 * d)} -> {t(rows, 4 * d)}",
            f"  %{p}m2 = train.gelu %{p}m1 approximate tanh : {t(rows, 4 * d)}",
            f"  %{p}m3 = train.matmul %{p}m2, %{p}w2, %{p}b2 : {t(rows, 4 * d)}, {t(4 * d, d)}, {t(d)} -> {A}",
            f"  %x{n + 1} = train.add %{p}r1, %{p}m3 : {A}, {A} -> {A}"]
    args += [f"%lnf_g: {t(d)} {ones}", f"%lnf_b: {t(d)} {zeros}", f"%w_out: {t(d, v)} {normal}"]
    body += [f"  %lnf = train.layer_norm %x{a.blocks}, %lnf_g, %lnf_b : {A}, {t(d)}",
             f"  %logits = train.matmul %lnf, %w_out : {A}, {t(d, v)} -> {t(rows, v)}",
             f"  %loss = train.cross_entropy %logits, %labels : {t(rows, v)}, {t(rows, ty='i32')} -> {t()}"]
    return args, body


VGG16_STAGES = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]


def vgg16(a):
    b = a.batch
    conv_init = "{train.param, train.init = #train.init<kaiming_normal>}"
    ones = "{train.param, train.init = #train.init<ones>}"
    zeros = "{train.param, train.init = #train.init<zeros>}"
    args = [f"%x: {t(b, 3, 32, 32)}", f"%labels: {t(b, ty='i32')}"]
    body, results = [], []
    x, cin, hw, n = "%x", 3, 32, 0
    for stage, widths in enumerate(VGG16_STAGES):
        for cout in widths:
            n += 1
            args += [f"%conv{n}: {t(cout, cin, 3, 3)} {conv_init}",
                     f"%bn{n}_g: {t(cout)} {ones}", f"%bn{n}_b: {t(cout)} {zeros}",
                     f"%bn{n}_m: {t(cout)} {{train.state, train.init = #train.init<zeros>}}",
                     f"%bn{n}_v: {t(cout)} {{train.state, train.init = #train.init<ones>}}"]
            act = t(b, cout, hw, hw)
            body += [f"  %y{n} = train.conv2d {x}, %conv{n} padding [1, 1] : {t(b, cin, hw, hw)}, {t(cout, cin, 3, 3)} -> {act}",
                     f"  %n{n}, %m{n}, %v{n} = train.batch_norm %y{n}, %bn{n}_g, %bn{n}_b, %bn{n}_m, %bn{n}_v : {act}, {t(cout)}",
                     f"  %r{n} = train.relu %n{n} : {act}"]
            results += [(f"%m{n}", t(cout)), (f"%v{n}", t(cout))]
            x, cin = f"%r{n}", cout
        body.append(f"  %p{stage + 1} = train.max_pool2d {x} kernel [2, 2] strides [2, 2] : {t(b, cin, hw, hw)} -> {t(b, cin, hw // 2, hw // 2)}")
        x, hw = f"%p{stage + 1}", hw // 2
    for i, (fin, fout) in enumerate([(512, 512), (512, 512), (512, 10)], 1):
        args += [f"%fc{i}_w: {t(fin, fout)} {{train.param, train.init = #train.init<fan_in_uniform>}}",
                 f"%fc{i}_b: {t(fout)} {{train.param, train.init = #train.init<fan_in_uniform(fan_in = {fin})>}}"]
    body += [f"  %flat = train.reshape {x} : {t(b, 512, 1, 1)} -> {t(b, 512)}",
             f"  %d1 = train.dropout %flat rate 0.5 seed 1 : {t(b, 512)}",
             f"  %fc1b = train.matmul %d1, %fc1_w, %fc1_b : {t(b, 512)}, {t(512, 512)}, {t(512)} -> {t(b, 512)}",
             f"  %fc1r = train.relu %fc1b : {t(b, 512)}",
             f"  %d2 = train.dropout %fc1r rate 0.5 seed 2 : {t(b, 512)}",
             f"  %fc2b = train.matmul %d2, %fc2_w, %fc2_b : {t(b, 512)}, {t(512, 512)}, {t(512)} -> {t(b, 512)}",
             f"  %fc2r = train.relu %fc2b : {t(b, 512)}",
             f"  %fc3b = train.matmul %fc2r, %fc3_w, %fc3_b : {t(b, 512)}, {t(512, 10)}, {t(10)} -> {t(b, 10)}",
             f"  %loss = train.cross_entropy %fc3b, %labels : {t(b, 10)}, {t(b, ty='i32')} -> {t()}"]
    return args, body, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    m = sub.add_parser("mlp")
    m.add_argument("--layers", type=int, required=True)
    m.add_argument("--width", type=int, default=256)
    m.add_argument("--batch", type=int, default=128)
    m.add_argument("--inputs", type=int, default=784)
    m.add_argument("--classes", type=int, default=10)
    tr = sub.add_parser("transformer")
    tr.add_argument("--blocks", type=int, required=True)
    tr.add_argument("--d", type=int, default=256)
    tr.add_argument("--heads", type=int, default=4)
    tr.add_argument("--seq", type=int, default=128)
    tr.add_argument("--batch", type=int, default=8)
    tr.add_argument("--vocab", type=int, default=1024)
    vg = sub.add_parser("vgg16")
    vg.add_argument("--batch", type=int, default=128)
    a = parser.parse_args()
    if (a.kind == "mlp" and a.layers < 1) or (a.kind == "transformer" and a.blocks < 1):
        parser.error("at least one layer or block")
    if a.batch < 1:
        parser.error("--batch must be at least 1")
    results = []
    if a.kind == "vgg16":
        args, body, results = vgg16(a)
    else:
        args, body = mlp(a) if a.kind == "mlp" else transformer(a)
    ops = sum(1 for line in body if "= train." in line)
    out = sys.stdout
    out.write(f"// gen_model.py {' '.join(sys.argv[1:])}: {ops} train ops\n")
    values = ["%loss"] + [v for v, _ in results]
    types = [t()] + [ty for _, ty in results]
    ret = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
    out.write("func.func @forward(\n    " + ",\n    ".join(args) + f"\n  ) -> {ret} {{\n")
    out.write("\n".join(body) + f"\n  return {', '.join(values)} : {', '.join(types)}\n}}\n")


main()
