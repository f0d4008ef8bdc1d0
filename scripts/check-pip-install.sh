#!/usr/bin/env bash
#===- scripts/check-pip-install.sh - the installed package works ---------===#
#
# `pip install .` into the project's venv (scripts/setup.sh), then from
# another directory, with no PYTHONPATH: `import amp` is the installed
# package, the console scripts run the package's own tools, and amp.compile
# trains a step whose artifact links the runtime archives the package holds
# (the build tree's are hidden for that part, then restored).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
python="$("$root/scripts/setup.sh" --print-python)"
venv="$(dirname "$python")"
"$python" -m pip install -q "$root"

work="$(mktemp -d)"
archive="$root/build/lib/Runtime/CPU/libAMPRuntimeCPU.a"
restore() {
  [ -f "$archive.hidden" ] && mv "$archive.hidden" "$archive"
  rm -rf "$work"
}
trap restore EXIT
cd "$work"
unset PYTHONPATH AMP_COMPILE
installed="$("$python" -c 'import amp, os; print(os.path.dirname(amp.__file__))')"
case "$installed" in
  */site-packages/amp) ;;
  *) echo "check-pip-install: import amp found $installed, not the installed package"; exit 1 ;;
esac
"$venv/amp-run" --help | grep -q "amp-run: train a model"
"$venv/amp-opt" --version | grep -q "LLVM version"
"$venv/amp-train" --help | grep -q "amp-train"
mv "$archive" "$archive.hidden"
AMP_CACHE=0 "$python" - <<'PY'
import torch, torch.nn as nn
import amp
assert amp._api._amp_compile().endswith("site-packages/amp/bin/amp-compile"), amp._api._amp_compile()
model = nn.Sequential(nn.Flatten(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 1, 4, 4), torch.randint(0, 4, (8,))
step = amp.compile(model, nn.CrossEntropyLoss(), (x, y), optimizer=opt)
losses = [step(x, y).loss for _ in range(5)]
assert losses[-1] < losses[0], losses
print("check-pip-install: the installed amp trains:", [round(l, 4) for l in losses])
PY
echo "check-pip-install: passed"
