"""Compares two amp checkpoints (safetensors) tensor by tensor, bit for bit,
and prints what the metrics of the injected run say of each step."""
import array
import json
import math
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, stop = info["data_offsets"]
        out[name] = (info["dtype"], body[start:stop])
    return out


inj, two = load(sys.argv[1]), load(sys.argv[2])
assert set(inj) == set(two), (sorted(inj), sorted(two))
for name in sorted(n for n in inj if n.startswith("state.")):
    assert inj[name][0] == "F32", inj[name][0]
    values = array.array("f", inj[name][1])
    print(name, "equal" if inj[name] == two[name] else "differ",
          "finite" if all(math.isfinite(v) for v in values) else "non-finite")
print("every tensor but the scaler's equal:",
      all(inj[n] == two[n] for n in inj if not n.startswith("scaler.")))
metrics = json.load(open(sys.argv[3]))
for step in metrics["steps"]:
    if "nonfinite" in step:
        print(f"step {step['step']}: {step['nonfinite']} {step['nonfinite_in']}")
print("forward_nonfinite_steps", metrics["forward_nonfinite_steps"])
