// VGG16 with batch norm on CIFAR-10-shaped input (3x32x32, 10 classes),
// batch 128: the classic AMP benchmark model (pytorch-apex-experiment).
// 13 conv3x3 (padding 1) + batch_norm + relu layers in five stages
// (64, 64 | 128, 128 | 256 x3 | 512 x3 | 512 x3), each stage ended by a 2x2
// max pool, then a 512-512-512-10 classifier with dropout 0.5.
// About 15M parameters; batch-norm running statistics are `train.state`
// arguments and the function returns the loss followed by their new values.

func.func @forward(
    %x: tensor<128x3x32x32xf32>,
    %labels: tensor<128xi32>,
    %conv1: tensor<64x3x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn1_g: tensor<64xf32> {train.param, train.init = #train.init<ones>},
    %bn1_b: tensor<64xf32> {train.param, train.init = #train.init<zeros>},
    %bn1_m: tensor<64xf32> {train.state, train.init = #train.init<zeros>},
    %bn1_v: tensor<64xf32> {train.state, train.init = #train.init<ones>},
    %conv2: tensor<64x64x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn2_g: tensor<64xf32> {train.param, train.init = #train.init<ones>},
    %bn2_b: tensor<64xf32> {train.param, train.init = #train.init<zeros>},
    %bn2_m: tensor<64xf32> {train.state, train.init = #train.init<zeros>},
    %bn2_v: tensor<64xf32> {train.state, train.init = #train.init<ones>},
    %conv3: tensor<128x64x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn3_g: tensor<128xf32> {train.param, train.init = #train.init<ones>},
    %bn3_b: tensor<128xf32> {train.param, train.init = #train.init<zeros>},
    %bn3_m: tensor<128xf32> {train.state, train.init = #train.init<zeros>},
    %bn3_v: tensor<128xf32> {train.state, train.init = #train.init<ones>},
    %conv4: tensor<128x128x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn4_g: tensor<128xf32> {train.param, train.init = #train.init<ones>},
    %bn4_b: tensor<128xf32> {train.param, train.init = #train.init<zeros>},
    %bn4_m: tensor<128xf32> {train.state, train.init = #train.init<zeros>},
    %bn4_v: tensor<128xf32> {train.state, train.init = #train.init<ones>},
    %conv5: tensor<256x128x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn5_g: tensor<256xf32> {train.param, train.init = #train.init<ones>},
    %bn5_b: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %bn5_m: tensor<256xf32> {train.state, train.init = #train.init<zeros>},
    %bn5_v: tensor<256xf32> {train.state, train.init = #train.init<ones>},
    %conv6: tensor<256x256x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn6_g: tensor<256xf32> {train.param, train.init = #train.init<ones>},
    %bn6_b: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %bn6_m: tensor<256xf32> {train.state, train.init = #train.init<zeros>},
    %bn6_v: tensor<256xf32> {train.state, train.init = #train.init<ones>},
    %conv7: tensor<256x256x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn7_g: tensor<256xf32> {train.param, train.init = #train.init<ones>},
    %bn7_b: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %bn7_m: tensor<256xf32> {train.state, train.init = #train.init<zeros>},
    %bn7_v: tensor<256xf32> {train.state, train.init = #train.init<ones>},
    %conv8: tensor<512x256x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn8_g: tensor<512xf32> {train.param, train.init = #train.init<ones>},
    %bn8_b: tensor<512xf32> {train.param, train.init = #train.init<zeros>},
    %bn8_m: tensor<512xf32> {train.state, train.init = #train.init<zeros>},
    %bn8_v: tensor<512xf32> {train.state, train.init = #train.init<ones>},
    %conv9: tensor<512x512x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn9_g: tensor<512xf32> {train.param, train.init = #train.init<ones>},
    %bn9_b: tensor<512xf32> {train.param, train.init = #train.init<zeros>},
    %bn9_m: tensor<512xf32> {train.state, train.init = #train.init<zeros>},
    %bn9_v: tensor<512xf32> {train.state, train.init = #train.init<ones>},
    %conv10: tensor<512x512x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn10_g: tensor<512xf32> {train.param, train.init = #train.init<ones>},
    %bn10_b: tensor<512xf32> {train.param, train.init = #train.init<zeros>},
    %bn10_m: tensor<512xf32> {train.state, train.init = #train.init<zeros>},
    %bn10_v: tensor<512xf32> {train.state, train.init = #train.init<ones>},
    %conv11: tensor<512x512x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn11_g: tensor<512xf32> {train.param, train.init = #train.init<ones>},
    %bn11_b: tensor<512xf32> {train.param, train.init = #train.init<zeros>},
    %bn11_m: tensor<512xf32> {train.state, train.init = #train.init<zeros>},
    %bn11_v: tensor<512xf32> {train.state, train.init = #train.init<ones>},
    %conv12: tensor<512x512x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn12_g: tensor<512xf32> {train.param, train.init = #train.init<ones>},
    %bn12_b: tensor<512xf32> {train.param, train.init = #train.init<zeros>},
    %bn12_m: tensor<512xf32> {train.state, train.init = #train.init<zeros>},
    %bn12_v: tensor<512xf32> {train.state, train.init = #train.init<ones>},
    %conv13: tensor<512x512x3x3xf32> {train.param, train.init = #train.init<kaiming_normal>},
    %bn13_g: tensor<512xf32> {train.param, train.init = #train.init<ones>},
    %bn13_b: tensor<512xf32> {train.param, train.init = #train.init<zeros>},
    %bn13_m: tensor<512xf32> {train.state, train.init = #train.init<zeros>},
    %bn13_v: tensor<512xf32> {train.state, train.init = #train.init<ones>},
    %fc1_w: tensor<512x512xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %fc1_b: tensor<512xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 512)>},
    %fc2_w: tensor<512x512xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %fc2_b: tensor<512xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 512)>},
    %fc3_w: tensor<512x10xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %fc3_b: tensor<10xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 512)>}
  ) -> (tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) {
  // conv1: 3 -> 64 channels at 32x32.
  %y1 = train.conv2d %x, %conv1 padding [1, 1] : tensor<128x3x32x32xf32>, tensor<64x3x3x3xf32> -> tensor<128x64x32x32xf32>
  %n1, %m1, %v1 = train.batch_norm %y1, %bn1_g, %bn1_b, %bn1_m, %bn1_v : tensor<128x64x32x32xf32>, tensor<64xf32>
  %r1 = train.relu %n1 : tensor<128x64x32x32xf32>
  // conv2: 64 -> 64 channels at 32x32.
  %y2 = train.conv2d %r1, %conv2 padding [1, 1] : tensor<128x64x32x32xf32>, tensor<64x64x3x3xf32> -> tensor<128x64x32x32xf32>
  %n2, %m2, %v2 = train.batch_norm %y2, %bn2_g, %bn2_b, %bn2_m, %bn2_v : tensor<128x64x32x32xf32>, tensor<64xf32>
  %r2 = train.relu %n2 : tensor<128x64x32x32xf32>
  %p1 = train.max_pool2d %r2 kernel [2, 2] strides [2, 2] : tensor<128x64x32x32xf32> -> tensor<128x64x16x16xf32>
  // conv3: 64 -> 128 channels at 16x16.
  %y3 = train.conv2d %p1, %conv3 padding [1, 1] : tensor<128x64x16x16xf32>, tensor<128x64x3x3xf32> -> tensor<128x128x16x16xf32>
  %n3, %m3, %v3 = train.batch_norm %y3, %bn3_g, %bn3_b, %bn3_m, %bn3_v : tensor<128x128x16x16xf32>, tensor<128xf32>
  %r3 = train.relu %n3 : tensor<128x128x16x16xf32>
  // conv4: 128 -> 128 channels at 16x16.
  %y4 = train.conv2d %r3, %conv4 padding [1, 1] : tensor<128x128x16x16xf32>, tensor<128x128x3x3xf32> -> tensor<128x128x16x16xf32>
  %n4, %m4, %v4 = train.batch_norm %y4, %bn4_g, %bn4_b, %bn4_m, %bn4_v : tensor<128x128x16x16xf32>, tensor<128xf32>
  %r4 = train.relu %n4 : tensor<128x128x16x16xf32>
  %p2 = train.max_pool2d %r4 kernel [2, 2] strides [2, 2] : tensor<128x128x16x16xf32> -> tensor<128x128x8x8xf32>
  // conv5: 128 -> 256 channels at 8x8.
  %y5 = train.conv2d %p2, %conv5 padding [1, 1] : tensor<128x128x8x8xf32>, tensor<256x128x3x3xf32> -> tensor<128x256x8x8xf32>
  %n5, %m5, %v5 = train.batch_norm %y5, %bn5_g, %bn5_b, %bn5_m, %bn5_v : tensor<128x256x8x8xf32>, tensor<256xf32>
  %r5 = train.relu %n5 : tensor<128x256x8x8xf32>
  // conv6: 256 -> 256 channels at 8x8.
  %y6 = train.conv2d %r5, %conv6 padding [1, 1] : tensor<128x256x8x8xf32>, tensor<256x256x3x3xf32> -> tensor<128x256x8x8xf32>
  %n6, %m6, %v6 = train.batch_norm %y6, %bn6_g, %bn6_b, %bn6_m, %bn6_v : tensor<128x256x8x8xf32>, tensor<256xf32>
  %r6 = train.relu %n6 : tensor<128x256x8x8xf32>
  // conv7: 256 -> 256 channels at 8x8.
  %y7 = train.conv2d %r6, %conv7 padding [1, 1] : tensor<128x256x8x8xf32>, tensor<256x256x3x3xf32> -> tensor<128x256x8x8xf32>
  %n7, %m7, %v7 = train.batch_norm %y7, %bn7_g, %bn7_b, %bn7_m, %bn7_v : tensor<128x256x8x8xf32>, tensor<256xf32>
  %r7 = train.relu %n7 : tensor<128x256x8x8xf32>
  %p3 = train.max_pool2d %r7 kernel [2, 2] strides [2, 2] : tensor<128x256x8x8xf32> -> tensor<128x256x4x4xf32>
  // conv8: 256 -> 512 channels at 4x4.
  %y8 = train.conv2d %p3, %conv8 padding [1, 1] : tensor<128x256x4x4xf32>, tensor<512x256x3x3xf32> -> tensor<128x512x4x4xf32>
  %n8, %m8, %v8 = train.batch_norm %y8, %bn8_g, %bn8_b, %bn8_m, %bn8_v : tensor<128x512x4x4xf32>, tensor<512xf32>
  %r8 = train.relu %n8 : tensor<128x512x4x4xf32>
  // conv9: 512 -> 512 channels at 4x4.
  %y9 = train.conv2d %r8, %conv9 padding [1, 1] : tensor<128x512x4x4xf32>, tensor<512x512x3x3xf32> -> tensor<128x512x4x4xf32>
  %n9, %m9, %v9 = train.batch_norm %y9, %bn9_g, %bn9_b, %bn9_m, %bn9_v : tensor<128x512x4x4xf32>, tensor<512xf32>
  %r9 = train.relu %n9 : tensor<128x512x4x4xf32>
  // conv10: 512 -> 512 channels at 4x4.
  %y10 = train.conv2d %r9, %conv10 padding [1, 1] : tensor<128x512x4x4xf32>, tensor<512x512x3x3xf32> -> tensor<128x512x4x4xf32>
  %n10, %m10, %v10 = train.batch_norm %y10, %bn10_g, %bn10_b, %bn10_m, %bn10_v : tensor<128x512x4x4xf32>, tensor<512xf32>
  %r10 = train.relu %n10 : tensor<128x512x4x4xf32>
  %p4 = train.max_pool2d %r10 kernel [2, 2] strides [2, 2] : tensor<128x512x4x4xf32> -> tensor<128x512x2x2xf32>
  // conv11: 512 -> 512 channels at 2x2.
  %y11 = train.conv2d %p4, %conv11 padding [1, 1] : tensor<128x512x2x2xf32>, tensor<512x512x3x3xf32> -> tensor<128x512x2x2xf32>
  %n11, %m11, %v11 = train.batch_norm %y11, %bn11_g, %bn11_b, %bn11_m, %bn11_v : tensor<128x512x2x2xf32>, tensor<512xf32>
  %r11 = train.relu %n11 : tensor<128x512x2x2xf32>
  // conv12: 512 -> 512 channels at 2x2.
  %y12 = train.conv2d %r11, %conv12 padding [1, 1] : tensor<128x512x2x2xf32>, tensor<512x512x3x3xf32> -> tensor<128x512x2x2xf32>
  %n12, %m12, %v12 = train.batch_norm %y12, %bn12_g, %bn12_b, %bn12_m, %bn12_v : tensor<128x512x2x2xf32>, tensor<512xf32>
  %r12 = train.relu %n12 : tensor<128x512x2x2xf32>
  // conv13: 512 -> 512 channels at 2x2.
  %y13 = train.conv2d %r12, %conv13 padding [1, 1] : tensor<128x512x2x2xf32>, tensor<512x512x3x3xf32> -> tensor<128x512x2x2xf32>
  %n13, %m13, %v13 = train.batch_norm %y13, %bn13_g, %bn13_b, %bn13_m, %bn13_v : tensor<128x512x2x2xf32>, tensor<512xf32>
  %r13 = train.relu %n13 : tensor<128x512x2x2xf32>
  %p5 = train.max_pool2d %r13 kernel [2, 2] strides [2, 2] : tensor<128x512x2x2xf32> -> tensor<128x512x1x1xf32>
  // Classifier: [128,512,1,1] -> 512 -> 512 -> 10, dropout 0.5 before each hidden linear layer.
  %flat = train.reshape %p5 : tensor<128x512x1x1xf32> -> tensor<128x512xf32>
  %d1 = train.dropout %flat rate 0.5 seed 1 : tensor<128x512xf32>
  %fc1b = train.matmul %d1, %fc1_w, %fc1_b : tensor<128x512xf32>, tensor<512x512xf32>, tensor<512xf32> -> tensor<128x512xf32>
  %fc1r = train.relu %fc1b : tensor<128x512xf32>
  %d2 = train.dropout %fc1r rate 0.5 seed 2 : tensor<128x512xf32>
  %fc2b = train.matmul %d2, %fc2_w, %fc2_b : tensor<128x512xf32>, tensor<512x512xf32>, tensor<512xf32> -> tensor<128x512xf32>
  %fc2r = train.relu %fc2b : tensor<128x512xf32>
  %fc3b = train.matmul %fc2r, %fc3_w, %fc3_b : tensor<128x512xf32>, tensor<512x10xf32>, tensor<10xf32> -> tensor<128x10xf32>
  %loss = train.cross_entropy %fc3b, %labels : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
  return %loss, %m1, %v1, %m2, %v2, %m3, %v3, %m4, %v4, %m5, %v5, %m6, %v6, %m7, %v7, %m8, %v8, %m9, %v9, %m10, %v10, %m11, %v11, %m12, %v12, %m13, %v13 : tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>
}
