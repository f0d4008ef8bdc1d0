#!/usr/bin/env bash
#===- bench/embedding_grad.sh - Cost of the embedding gradient -----------===#
#
# The embedding gradient of a GPT-2-sized table (vocabulary 50257, dimension
# 768) for 8 x 1024 tokens on the CPU, side by side in one run:
#   scatter-add  amp_cpu_embedding_grad (--backend=cpu): positions x dim adds
#   reduction    the linalg lowering (--backend=cpu-loops): a reduction over
#                vocabulary x dimension x positions (3.2e11 operations); timed
#                at a 1024-word vocabulary and scaled linearly (its cost is
#                linear in the vocabulary) since one full call takes minutes.
#   bench/embedding_grad.sh [BUILD_DIR]
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
bench="$build/bin/amp-bench-embedding-grad"
cmake --build "$build" --target amp-bench-embedding-grad >/dev/null

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$bench" 50257 768 8192 7
small=$("$bench" 1024 768 8192 3 loops)
echo "$small"
ms=$(echo "$small" | sed -E 's/.*median ([0-9.e+-]+) ms.*/\1/')
python3 -c "print(f'reduction at vocab 50257 (scaled x{50257/1024:.2f}): {float(\"$ms\") * 50257 / 1024 / 1000:.0f} s per call')"
