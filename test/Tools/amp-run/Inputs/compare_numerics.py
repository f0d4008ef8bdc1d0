"""Compares two amp-run metrics files, the second run with --check-numerics:
the losses and scales of every step are equal (bit for bit: the same JSON
numbers), and the second names where each step's first inf or NaN was born
exactly on the steps that were skipped or whose loss was not finite."""
import json
import sys

plain = json.load(open(sys.argv[1]))["steps"]
checked = json.load(open(sys.argv[2]))["steps"]
assert len(plain) == len(checked), (len(plain), len(checked))
same = all(a["loss"] == b["loss"] and a["scale"] == b["scale"] and
           a["skipped"] == b["skipped"] for a, b in zip(plain, checked))
print("losses equal:", same)
consistent = True
for entry in checked:
    report = entry.get("numerics")
    troubled = entry["skipped"] or entry["loss"] is None
    consistent &= (report is not None) == troubled
    if report is not None:
        where = report.get("argument") or "%s %s %s:%d" % (
            report["stage"], report["op"], report["file"].rsplit("/", 1)[-1],
            report["line"])
        print("step %d: %s %s" % (entry["step"], report["value"], where))
print("reports exactly on the troubled steps:", consistent)
