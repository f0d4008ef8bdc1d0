"""Compares two amp-run/amp-train metrics files step by step.

same_run.py A.json B.json [RTOL]: the configurations (but the backend) are
equal, every step's loss agrees (exactly, or within relative tolerance RTOL),
the skipped steps and scales are the same, and so is the test accuracy
(within 2 points when RTOL is given). Exits 1 naming the first difference.
"""
import json
import sys


def main():
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    ca, cb = dict(a["config"]), dict(b["config"])
    ca.pop("backend")
    cb.pop("backend")
    if ca != cb:
        sys.exit(f"configurations differ: {ca} vs {cb}")
    if len(a["steps"]) != len(b["steps"]) or not a["steps"]:
        sys.exit(f"{len(a['steps'])} vs {len(b['steps'])} steps")
    for sa, sb in zip(a["steps"], b["steps"]):
        la, lb = sa["loss"], sb["loss"]
        if abs(la - lb) > rtol * abs(lb):
            sys.exit(f"step {sa['step']}: loss {la!r} vs {lb!r} (rtol {rtol})")
        if sa["skipped"] != sb["skipped"] or sa["scale"] != sb["scale"]:
            sys.exit(f"step {sa['step']}: skipped/scale differ")
    acc_tol = 2.0 if rtol else 0.0  # percentage points
    if abs(a["test_accuracy_percent"] - b["test_accuracy_percent"]) > acc_tol:
        sys.exit(f"accuracy {a['test_accuracy_percent']}% vs "
                 f"{b['test_accuracy_percent']}%")
    print(f"same run: {len(a['steps'])} steps, final loss "
          f"{a['steps'][-1]['loss']:.6f}, accuracy {a['test_accuracy_percent']:.2f}%")


main()
