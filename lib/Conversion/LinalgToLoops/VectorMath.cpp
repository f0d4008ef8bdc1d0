//===- VectorMath.cpp - exp, tanh, erf as arithmetic LLVM can vectorize ---===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU pipeline calls libm for transcendentals: accurate, but one scalar
// call per element, so a loop over them does not vectorize (a GELU-tanh MLP
// spent a quarter of its step in tanhf). amp-vectorizable-math replaces f32
// math.exp and math.tanh by straight-line arithmetic (selects, no branches):
//
//   exp(x): x = k ln2 + r with k = round(x / ln2), r from a two-part ln2
//     (Cody-Waite), exp(r) = 1 + r + r^2 P(r) with Cephes' degree-5 minimax
//     P, times 2^k built in two exact factors (so results down to the
//     smallest subnormal round once); +inf above ln(FLT_MAX), 0 below the
//     subnormals, NaN kept.
//
// Only arith ops (bit operations for |x|, 2^k and rounding, mul and add
// for the polynomials): math.fma, math.absf or math.floor would become libm
// calls in convert-math-to-libm, which stop the loop's vectorization.
//   tanh(x): |x| < 0.625: x + x^3 Q(x^2), Cephes' degree-4 minimax Q;
//     else sign(x) (1 - 2 / (exp(2|x|) + 1)), |x| capped at 10 (where the
//     result is 1.0f already).
//   erf(x) (GELU's): Cephes' erff: |x| < 1: x T(x^2), degree 6; else
//     sign(x) (1 - erfc(|x|)), erfc(z) = exp(-z^2) / z P(1/z^2) with a
//     degree-8 P below 2 and a degree-7 R above, |x| capped at 10.
//
// Measured against f64 over a sweep of f32 inputs (OpNumerics,
// Transcendentals): exp and tanh within 1.5 ulps, erf within 3, where
// glibc's scalar expf/tanhf/erff are within 1.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace amp {
#define GEN_PASS_DEF_VECTORIZABLEMATHPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// Builds f32 (or vector-of-f32) arithmetic at one location.
struct F32Builder {
  PatternRewriter &b;
  Location loc;
  Type type; // f32 or vector<...xf32>

  Type intType() const {
    if (auto v = dyn_cast<VectorType>(type))
      return v.clone(b.getI32Type());
    return b.getI32Type();
  }
  /// The constant `scalar` as a value of type `t` (splat for a vector).
  Value constant(Type t, TypedAttr scalar) const {
    if (isa<VectorType>(t))
      scalar = DenseElementsAttr::get(cast<ShapedType>(t), scalar);
    return arith::ConstantOp::create(b, loc, t, scalar);
  }
  Value c(double v) const {
    return constant(type, b.getF32FloatAttr(float(v)));
  }
  Value ci(int32_t v) const {
    return constant(intType(), b.getI32IntegerAttr(v));
  }
  Value add(Value l, Value r) const {
    return arith::AddFOp::create(b, loc, l, r);
  }
  Value sub(Value l, Value r) const {
    return arith::SubFOp::create(b, loc, l, r);
  }
  Value mul(Value l, Value r) const {
    return arith::MulFOp::create(b, loc, l, r);
  }
  Value div(Value l, Value r) const {
    return arith::DivFOp::create(b, loc, l, r);
  }
  /// a * x + y, rounded twice (arith: math.fma would become a libm call
  /// in convert-math-to-libm and stop the loop's vectorization).
  Value muladd(Value a, Value x, Value y) const { return add(mul(a, x), y); }
  Value cmp(arith::CmpFPredicate p, Value l, Value r) const {
    return arith::CmpFOp::create(b, loc, p, l, r);
  }
  Value select(Value cond, Value t, Value f) const {
    return arith::SelectOp::create(b, loc, cond, t, f);
  }
  /// a[0] + x (a[1] + x (a[2] + ...)) (Horner).
  Value horner(Value x, ArrayRef<double> a) const {
    Value p = c(a.back());
    for (double coefficient : llvm::reverse(a.drop_back()))
      p = muladd(p, x, c(coefficient));
    return p;
  }
  /// 2^k for an i32 k in [-126, 127], from its exponent bits.
  Value pow2(Value k) const {
    Value bits = arith::ShLIOp::create(
        b, loc, arith::AddIOp::create(b, loc, k, ci(127)), ci(23));
    return arith::BitcastOp::create(b, loc, type, bits);
  }
  /// |x|, by clearing the sign bit.
  Value abs(Value x) const {
    Value bits = arith::BitcastOp::create(b, loc, intType(), x);
    return arith::BitcastOp::create(
        b, loc, type, arith::AndIOp::create(b, loc, bits, ci(0x7fffffff)));
  }

  /// exp(x), see the file comment.
  Value exp(Value x) const {
    // Beyond these, +inf and 0 (below the smallest subnormal's half).
    Value big = c(88.72283935546875), small = c(-103.97207708);
    // Compare-and-select (arith.minimumf's NaN handling is a dozen
    // instructions on x86, which makes LLVM's cost model keep the loop
    // scalar); a NaN passes through to the last select.
    Value clamped =
        select(cmp(arith::CmpFPredicate::OLT, x, small), small,
               select(cmp(arith::CmpFPredicate::OGT, x, big), big, x));
    // k = x / ln2 rounded to the nearest integer (even on ties): adding and
    // subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 there.
    Value magic = c(12582912.0);
    Value k = sub(add(mul(clamped, c(1.44269504088896341)), magic), magic);
    // r = x - k ln2, ln2 = 0.693359375 - 2.12194440e-4: the first part has 9
    // bits, so k times it is exact (|k| <= 150) and so is its subtraction.
    Value r = sub(clamped, mul(k, c(0.693359375)));
    r = add(r, mul(k, c(2.12194440e-4)));
    Value p = horner(r, {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
                         8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4});
    Value y = add(muladd(mul(r, r), p, r), c(1.0));
    // 2^k as two factors, each a normal number (k in [-150, 128]): y times
    // the first is exact, the second rounds once, subnormals included.
    Value ki = arith::FPToSIOp::create(b, loc, intType(), k);
    Value half = arith::ShRSIOp::create(b, loc, ki, ci(1));
    y = mul(mul(y, pow2(half)), pow2(arith::SubIOp::create(b, loc, ki, half)));
    y = select(cmp(arith::CmpFPredicate::OGT, x, big), c(INFINITY), y);
    y = select(cmp(arith::CmpFPredicate::OLT, x, small), c(0.0), y);
    // NaN in, NaN out (the clamps above dropped it).
    return select(cmp(arith::CmpFPredicate::UNO, x, x), x, y);
  }

  /// erf(x), see the file comment.
  Value erf(Value x) const {
    Value z = abs(x);
    // |x| < 1: x T(x^2).
    Value small = mul(x, horner(mul(x, x), {1.128379165726710e0,
                                            -3.761262582423300e-1,
                                            1.128358514861418e-1,
                                            -2.685381193529856e-2,
                                            5.188327685732524e-3,
                                            -8.010193625184903e-4,
                                            7.853861353153693e-5}));
    // |x| >= 1: 1 - erfc(|x|), erfc(z) = e^(-z^2) / z P(1/z^2) with P for
    // [1, 2) and R beyond; z in [1, 10] (erfc(10) is 0 in f32), so the
    // untaken lanes divide by nothing smaller than 1.
    Value one = c(1.0);
    Value w = select(cmp(arith::CmpFPredicate::OLT, z, one), one,
                     select(cmp(arith::CmpFPredicate::OGT, z, c(10.0)),
                            c(10.0), z));
    Value q = div(one, w);
    Value y = mul(q, q);
    Value p = horner(y, {5.638259427386472e-1, -2.741127028184656e-1,
                         3.404879937665872e-1, -4.944515323274145e-1,
                         6.210004621745983e-1, -5.824733027278666e-1,
                         3.687424674597105e-1, -1.387039388740657e-1,
                         2.326819970068386e-2});
    Value r = horner(y, {5.641895067754075e-1, -2.820767439740514e-1,
                         4.218463358204948e-1, -1.015265279202700e0,
                         2.921019019210786e0, -7.495518717768503e0,
                         1.297719955372516e1, -1.047766399936249e1});
    Value poly = select(cmp(arith::CmpFPredicate::OLT, w, c(2.0)), p, r);
    Value erfc = mul(mul(exp(arith::NegFOp::create(b, loc, mul(w, w))), q),
                     poly);
    Value large = sub(one, erfc);
    large = select(cmp(arith::CmpFPredicate::OLT, x, c(0.0)),
                   arith::NegFOp::create(b, loc, large), large);
    // NaN fails every comparison: it takes the large branch, where w is
    // NaN too.
    Value nanOrLarge = select(cmp(arith::CmpFPredicate::UNO, x, x), x, large);
    return select(cmp(arith::CmpFPredicate::OLT, z, one), small, nanOrLarge);
  }

  /// tanh(x), see the file comment.
  Value tanh(Value x) const {
    Value z = abs(x);
    Value z2 = mul(x, x);
    Value q = horner(z2, {-3.33332819422e-1, 1.33314422036e-1,
                          -5.37397155531e-2, 2.06390887954e-2,
                          -5.70498872745e-3});
    Value small = muladd(mul(x, z2), q, x);
    // 1 - 2 / (e^2z + 1), with z capped where the result is 1 anyway.
    Value capped = select(cmp(arith::CmpFPredicate::OGT, z, c(10.0)), c(10.0), z);
    Value e = exp(add(capped, capped));
    Value large = sub(c(1.0), div(c(2.0), add(e, c(1.0))));
    // The sign of x (a negative zero and NaN take the other branch or stay
    // NaN).
    large = select(cmp(arith::CmpFPredicate::OLT, x, c(0.0)),
                   arith::NegFOp::create(b, loc, large), large);
    Value result =
        select(cmp(arith::CmpFPredicate::OLT, z, c(0.625)), small, large);
    // tanh(-0) = -0: the polynomial's sum of two zeros is +0.
    return select(cmp(arith::CmpFPredicate::OEQ, x, c(0.0)), x, result);
  }
};

bool isF32(Type t) { return getElementTypeOrSelf(t).isF32(); }

/// Replaces an f32 `MathOp` by F32Builder's `expand` of its operand.
template <typename MathOp, Value (F32Builder::*expand)(Value) const>
struct InlineMathPattern : OpRewritePattern<MathOp> {
  using OpRewritePattern<MathOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    if (!isF32(op.getType()))
      return failure();
    F32Builder f{rewriter, op.getLoc(), op.getType()};
    rewriter.replaceOp(op, (f.*expand)(op.getOperand()));
    return success();
  }
};

struct VectorizableMathPass
    : public amp::impl::VectorizableMathPassBase<VectorizableMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<InlineMathPattern<math::ExpOp, &F32Builder::exp>,
                 InlineMathPattern<math::TanhOp, &F32Builder::tanh>,
                 InlineMathPattern<math::ErfOp, &F32Builder::erf>>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
