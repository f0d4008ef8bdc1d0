"""The rest of the modern-model parity set, too slow for CI
(scripts/slow-checks.sh runs them): torchvision's ConvNeXt-Tiny and
EfficientNet-B0 at O0 (stochastic depth off, dropout 0), 10 classes, 64x64
inputs, batch 4, 5 SGD-momentum steps, held as test_vision.py holds
MobileNetV3 (the f64 envelope: both have batch norms or layer norms whose
biases are zero in exact arithmetic after a projection)."""

import torch

from test_transformers import check_o0
from test_vision import image_batches


def sgd(parameters):
    return torch.optim.SGD(parameters, lr=1e-3, momentum=0.9, weight_decay=5e-4)


def test_torchvision_convnext_tiny_o0_matches_pytorch():
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.convnext_tiny(num_classes=10, stochastic_depth_prob=0.0)
    check_o0(model, sgd, image_batches(64), envelope=True)


def test_torchvision_efficientnet_b0_o0_matches_pytorch():
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.efficientnet_b0(num_classes=10, dropout=0.0,
                                               stochastic_depth_prob=0.0)
    check_o0(model, sgd, image_batches(64), envelope=True)


def test_torchvision_swin_t_o0_matches_pytorch():
    """Swin-T: shifted windows (roll), padding to the window size, patch
    merging (strided slices), the attention mask built by filling slices
    (folded at import), the relative position bias gathered from its table
    by indices computed at import (an embedding gather)."""
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.swin_t(num_classes=10)  # its stochastic depth is fixed
    for module in model.modules():
        if isinstance(module, torchvision.ops.StochasticDepth):
            module.p = 0.0
    check_o0(model, sgd, image_batches(64), envelope=True)
