"""Writes a safetensors data file for two_inputs.mlir with the standard
library only (lit's python has no numpy): `image` [N, 16] and `features`
[N, 4] uniform in [-1, 1), `labels` [N] int32, the argmax of a fixed linear
teacher over both inputs (so a model must read both to learn it).

usage: write_safetensors.py OUT N [drop=NAME] [rename=OLD:NEW] [features=K]
"""
import json
import random
import struct
import sys

out, count = sys.argv[1], int(sys.argv[2])
options = dict(a.split("=", 1) for a in sys.argv[3:])
feature_width = int(options.get("features", 4))
rng = random.Random(7)
teacher = [[rng.uniform(-1, 1) for _ in range(3)] for _ in range(16 + 4)]
image, features, labels = [], [], []
for _ in range(count):
    x = [rng.uniform(-1, 1) for _ in range(16)]
    f = [rng.uniform(-1, 1) for _ in range(4)]
    # The features weigh as much as the image: a model without them fails.
    score = [sum(v * teacher[i][c] for i, v in enumerate(x)) * 0.5 +
             sum(3 * v * teacher[16 + i][c] for i, v in enumerate(f)) for c in range(3)]
    labels.append(max(range(3), key=lambda c: score[c]))
    image += x
    features += (f + [0.0] * feature_width)[:feature_width]
tensors = {"image": ("F32", [count, 16], struct.pack(f"<{len(image)}f", *image)),
           "features": ("F32", [count, feature_width],
                        struct.pack(f"<{len(features)}f", *features)),
           "labels": ("I32", [count], struct.pack(f"<{count}i", *labels))}
if "drop" in options:
    del tensors[options["drop"]]
if "rename" in options:
    old, new = options["rename"].split(":")
    tensors[new] = tensors.pop(old)
header, blob = {}, b""
for name, (dtype, shape, data) in tensors.items():
    header[name] = {"dtype": dtype, "shape": shape,
                    "data_offsets": [len(blob), len(blob) + len(data)]}
    blob += data
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + blob)
