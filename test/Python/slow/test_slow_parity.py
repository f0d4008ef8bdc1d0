"""Parity checks too slow for CI (scripts/slow-checks.sh runs them).

vgg11_bn at O1-f16 against torch.autocast("cpu", float16) + GradScaler over
30 steps: the check of test_parity.check_o1_loss_curve. PyTorch's own f16
autocast reference costs about 16 s per step on an AVX2 CPU (no f16
arithmetic: its f16 convolutions and GEMMs take slow paths), 8 minutes for
the 30 steps; amp's step is 3 s.
"""

import torch

from test_parity import check_o1_loss_curve


def test_vgg11_bn_o1_f16_loss_curve_matches_autocast():
    check_o1_loss_curve("vgg11_bn", torch.float16)
