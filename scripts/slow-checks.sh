#!/usr/bin/env bash
# Checks too slow for CI (test/Python/slow): vgg11_bn's O1-f16 loss curve
# against PyTorch's f16 autocast (about 12 minutes on 2 cores), and the rest
# of the modern-model O0 parity set (ConvNeXt-Tiny, EfficientNet-B0:
# test_slow_modern.py; test_transformers.py and test_vision.py hold one
# model per family in CI). Needs the
# build (scripts/test.sh or scripts/configure.sh && ninja -C build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=$("$root/scripts/setup.sh" --print-python)
# The package pip installs (scripts/check-pip-install.sh).
bash "$root/scripts/check-pip-install.sh"
cd "$root/test/Python"
PYTHONPATH="$root/build/python:$root/test/Python" AMP_COMPILE="$root/build/bin/amp-compile" \
  exec "$python" -m pytest -q -s -p no:cacheprovider slow "$@"
