// A pre-LN transformer block as a small causal language model: token and
// learned position embeddings, one block (layer_norm, Q/K/V projections,
// 4-head scaled causal softmax attention, output projection, residual;
// layer_norm, GELU MLP 256-1024-256, residual), a final layer_norm and an
// LM head with cross-entropy against the next tokens.
// d = 256, 4 heads of 64, sequence 128, batch 8, vocabulary 1024.
//
// Shapes: tokens [8,128] -> activations [8*128, 256] = [1024, 256];
// attention runs on [8*4, 128, 64] = [32, 128, 64] per-head tensors.

func.func @forward(
    %tokens: tensor<8x128xi32>,
    %labels: tensor<1024xi32>,
    %tok_emb: tensor<1024x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %pos_emb: tensor<128x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %ln1_g: tensor<256xf32> {train.param, train.init = #train.init<ones>},
    %ln1_b: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %wq: tensor<256x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %bq: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %wk: tensor<256x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %bk: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %wv: tensor<256x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %bv: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %wo: tensor<256x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %bo: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %ln2_g: tensor<256xf32> {train.param, train.init = #train.init<ones>},
    %ln2_b: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %w1: tensor<256x1024xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %b1: tensor<1024xf32> {train.param, train.init = #train.init<zeros>},
    %w2: tensor<1024x256xf32> {train.param, train.init = #train.init<normal(0.02)>},
    %b2: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %lnf_g: tensor<256xf32> {train.param, train.init = #train.init<ones>},
    %lnf_b: tensor<256xf32> {train.param, train.init = #train.init<zeros>},
    %w_out: tensor<256x1024xf32> {train.param, train.init = #train.init<normal(0.02)>}
  ) -> tensor<f32> {
  // Embeddings: token rows plus a learned position row per sequence index.
  %te = train.embedding %tok_emb, %tokens : tensor<1024x256xf32>, tensor<8x128xi32> -> tensor<8x128x256xf32>
  %e = train.add %te, %pos_emb : tensor<8x128x256xf32>, tensor<128x256xf32> -> tensor<8x128x256xf32>
  %x0 = train.reshape %e : tensor<8x128x256xf32> -> tensor<1024x256xf32>

  // Attention sub-block (pre-LN).
  %ln1 = train.layer_norm %x0, %ln1_g, %ln1_b : tensor<1024x256xf32>, tensor<256xf32>
  %q1 = train.matmul %ln1, %wq, %bq : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<256xf32> -> tensor<1024x256xf32>
  %k1 = train.matmul %ln1, %wk, %bk : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<256xf32> -> tensor<1024x256xf32>
  %v1 = train.matmul %ln1, %wv, %bv : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<256xf32> -> tensor<1024x256xf32>
  // Split heads: [1024,256] -> [8,128,4,64] -> [8,4,128,64] -> [32,128,64].
  %q2 = train.reshape %q1 : tensor<1024x256xf32> -> tensor<8x128x4x64xf32>
  %q3 = train.transpose %q2 permutation [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
  %q = train.reshape %q3 : tensor<8x4x128x64xf32> -> tensor<32x128x64xf32>
  %k2 = train.reshape %k1 : tensor<1024x256xf32> -> tensor<8x128x4x64xf32>
  %k3 = train.transpose %k2 permutation [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
  %k = train.reshape %k3 : tensor<8x4x128x64xf32> -> tensor<32x128x64xf32>
  %v2 = train.reshape %v1 : tensor<1024x256xf32> -> tensor<8x128x4x64xf32>
  %v3 = train.transpose %v2 permutation [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
  %v = train.reshape %v3 : tensor<8x4x128x64xf32> -> tensor<32x128x64xf32>
  // Scaled causal attention: softmax(q k^T / sqrt(64)) v.
  %s0 = train.batch_matmul %q, %k transpose_rhs : tensor<32x128x64xf32>, tensor<32x128x64xf32> -> tensor<32x128x128xf32>
  %scale = train.constant dense<0.125> : tensor<f32>
  %s1 = train.mul %s0, %scale : tensor<32x128x128xf32>, tensor<f32> -> tensor<32x128x128xf32>
  %p = train.softmax %s1 axis 2 causal : tensor<32x128x128xf32>
  %ctx0 = train.batch_matmul %p, %v : tensor<32x128x128xf32>, tensor<32x128x64xf32> -> tensor<32x128x64xf32>
  // Merge heads: [32,128,64] -> [8,4,128,64] -> [8,128,4,64] -> [1024,256].
  %ctx1 = train.reshape %ctx0 : tensor<32x128x64xf32> -> tensor<8x4x128x64xf32>
  %ctx2 = train.transpose %ctx1 permutation [0, 2, 1, 3] : tensor<8x4x128x64xf32> -> tensor<8x128x4x64xf32>
  %ctx = train.reshape %ctx2 : tensor<8x128x4x64xf32> -> tensor<1024x256xf32>
  %o1 = train.matmul %ctx, %wo, %bo : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<256xf32> -> tensor<1024x256xf32>
  %x1 = train.add %x0, %o1 : tensor<1024x256xf32>, tensor<1024x256xf32> -> tensor<1024x256xf32>

  // MLP sub-block (pre-LN).
  %ln2 = train.layer_norm %x1, %ln2_g, %ln2_b : tensor<1024x256xf32>, tensor<256xf32>
  %m1 = train.matmul %ln2, %w1, %b1 : tensor<1024x256xf32>, tensor<256x1024xf32>, tensor<1024xf32> -> tensor<1024x1024xf32>
  %m2 = train.gelu %m1 approximate tanh : tensor<1024x1024xf32>
  %m4 = train.matmul %m2, %w2, %b2 : tensor<1024x1024xf32>, tensor<1024x256xf32>, tensor<256xf32> -> tensor<1024x256xf32>
  %x2 = train.add %x1, %m4 : tensor<1024x256xf32>, tensor<1024x256xf32> -> tensor<1024x256xf32>

  // LM head.
  %lnf = train.layer_norm %x2, %lnf_g, %lnf_b : tensor<1024x256xf32>, tensor<256xf32>
  %logits = train.matmul %lnf, %w_out : tensor<1024x256xf32>, tensor<256x1024xf32> -> tensor<1024x1024xf32>
  %loss = train.cross_entropy %logits, %labels : tensor<1024x1024xf32>, tensor<1024xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
