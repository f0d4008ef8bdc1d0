//===- CpuJitTest.cpp - The CPU JIT's LLVM-level helpers ------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CpuJit.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace {

// Only the named entries' pointer parameters become noalias; integer
// parameters, other functions and declarations are left alone.
TEST(CpuJit, EntryArgumentsNoAlias) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(
      "define void @train_step(ptr %a, ptr %b, i64 %n, ptr %out) {\n"
      "  ret void\n}\n"
      "define void @helper(ptr %p) {\n  ret void\n}\n"
      "declare void @forward(ptr)\n",
      error, context);
  ASSERT_TRUE(module) << error.getMessage().str();
  amp::markEntryArgumentsNoAlias(*module, {"train_step", "forward", "absent"});
  llvm::Function *step = module->getFunction("train_step");
  EXPECT_TRUE(step->getArg(0)->hasNoAliasAttr());
  EXPECT_TRUE(step->getArg(1)->hasNoAliasAttr());
  EXPECT_FALSE(step->getArg(2)->hasAttribute(llvm::Attribute::NoAlias));
  EXPECT_TRUE(step->getArg(3)->hasNoAliasAttr());
  EXPECT_FALSE(module->getFunction("helper")->getArg(0)->hasNoAliasAttr());
  EXPECT_FALSE(module->getFunction("forward")->getArg(0)->hasNoAliasAttr());
}

} // namespace
