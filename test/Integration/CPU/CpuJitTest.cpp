//===- CpuJitTest.cpp - The CPU JIT's LLVM-level helpers ------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CpuJit.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <gtest/gtest.h>

namespace {

// Only the named entries' pointer parameters become noalias; integer
// parameters, other functions and declarations are left alone, and so is an
// entry without loops (a large step whose loops were all outlined).
TEST(CpuJit, EntryArgumentsNoAlias) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(
      "define void @train_step(ptr %a, ptr %b, i64 %n, ptr %out) {\n"
      "entry:\n  br label %loop\n"
      "loop:\n"
      "  %i = phi i64 [ 0, %entry ], [ %next, %loop ]\n"
      "  %next = add i64 %i, 1\n"
      "  %done = icmp eq i64 %next, %n\n"
      "  br i1 %done, label %exit, label %loop\n"
      "exit:\n  ret void\n}\n"
      "define void @glue(ptr %a, ptr %b) {\n"
      "entry:\n  call void @helper(ptr %a)\n  br label %next\n"
      "next:\n  call void @helper(ptr %b)\n  ret void\n}\n"
      "define void @helper(ptr %p) {\n  ret void\n}\n"
      "declare void @forward(ptr)\n",
      error, context);
  ASSERT_TRUE(module) << error.getMessage().str();
  amp::markEntryArgumentsNoAlias(*module,
                                 {"train_step", "glue", "forward", "absent"});
  llvm::Function *step = module->getFunction("train_step");
  EXPECT_TRUE(step->getArg(0)->hasNoAliasAttr());
  EXPECT_TRUE(step->getArg(1)->hasNoAliasAttr());
  EXPECT_FALSE(step->getArg(2)->hasAttribute(llvm::Attribute::NoAlias));
  EXPECT_TRUE(step->getArg(3)->hasNoAliasAttr());
  EXPECT_FALSE(module->getFunction("glue")->getArg(0)->hasNoAliasAttr());
  EXPECT_FALSE(module->getFunction("glue")->getArg(1)->hasNoAliasAttr());
  EXPECT_FALSE(module->getFunction("helper")->getArg(0)->hasNoAliasAttr());
  EXPECT_FALSE(module->getFunction("forward")->getArg(0)->hasNoAliasAttr());
}

// An element-wise loop y[i] = x[i] * x[i] + 1 over 4096 floats, optimized
// at O3 for `cpu`; returns the optimized IR.
std::string vectorizeFor(llvm::StringRef cpu) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return "no x86 target: " + lookupError;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, "", llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(
      "define void @loop(ptr noalias %x, ptr noalias %y) {\n"
      "entry:\n  br label %body\n"
      "body:\n"
      "  %i = phi i64 [ 0, %entry ], [ %next, %body ]\n"
      "  %px = getelementptr float, ptr %x, i64 %i\n"
      "  %v = load float, ptr %px\n"
      "  %sq = fmul float %v, %v\n"
      "  %r = fadd float %sq, 1.0\n"
      "  %py = getelementptr float, ptr %y, i64 %i\n"
      "  store float %r, ptr %py\n"
      "  %next = add i64 %i, 1\n"
      "  %done = icmp eq i64 %next, 4096\n"
      "  br i1 %done, label %exit, label %body\n"
      "exit:\n  ret void\n}\n",
      error, context);
  if (!module)
    return "parse error: " + error.getMessage().str();
  module->setTargetTriple(triple);
  module->setDataLayout(machine->createDataLayout());
  amp::preferFullWidthVectors(*module, *machine);
  if (llvm::Error e =
          mlir::makeOptimizingTransformer(3, 0, machine.get())(module.get()))
    return "optimization failed: " + llvm::toString(std::move(e));
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  return text;
}

// On an AVX-512 CPU the loops get 16-float vectors, which LLVM's own tuning
// for these CPUs (256-bit preferred) would not use; on an AVX2 CPU nothing
// changes: 8 floats.
TEST(CpuJit, FullWidthVectorsOnAvx512) {
  std::string sapphireRapids = vectorizeFor("sapphirerapids");
  EXPECT_NE(sapphireRapids.find("<16 x float>"), std::string::npos)
      << sapphireRapids;
  EXPECT_NE(sapphireRapids.find("\"prefer-vector-width\"=\"512\""),
            std::string::npos);
  std::string haswell = vectorizeFor("haswell");
  EXPECT_EQ(haswell.find("<16 x float>"), std::string::npos) << haswell;
  EXPECT_NE(haswell.find("<8 x float>"), std::string::npos) << haswell;
  EXPECT_EQ(haswell.find("prefer-vector-width"), std::string::npos);
}

} // namespace
