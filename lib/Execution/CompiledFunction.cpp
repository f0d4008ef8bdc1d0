//===- CompiledFunction.cpp - A compiled function the host calls ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CompiledFunction.h"

using namespace amp;

int64_t TensorSpec::getNumElements() const { return numElements(shape); }

std::string TensorSpec::str() const { return tensorTypeString(kind, shape); }

void PackedDescriptors::add(const void *data, llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> d;
  d.push_back(reinterpret_cast<int64_t>(data));
  d.push_back(reinterpret_cast<int64_t>(data));
  d.push_back(0);
  llvm::append_range(d, shape);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  llvm::append_range(d, strides);
  descriptors.push_back(std::move(d));
}

llvm::MutableArrayRef<void *> PackedDescriptors::get() {
  pointers.clear();
  for (std::vector<int64_t> &d : descriptors)
    pointers.push_back(d.data());
  packed.clear();
  for (void *&p : pointers)
    packed.push_back(&p);
  return packed;
}

CompiledFunction::~CompiledFunction() = default;

llvm::Error
CompiledFunction::checkInputs(llvm::StringRef name,
                              llvm::ArrayRef<TensorSpec> specs,
                              llvm::ArrayRef<const HostTensor *> inputs) {
  if (inputs.size() != specs.size())
    return llvm::createStringError(
        "@" + name.str() + " takes " + std::to_string(specs.size()) +
        " arguments, got " + std::to_string(inputs.size()));
  for (auto [i, input] : llvm::enumerate(inputs)) {
    const TensorSpec &spec = specs[i];
    if (input->getKind() != spec.kind ||
        input->getShape() != llvm::ArrayRef<int64_t>(spec.shape))
      return llvm::createStringError(
          "argument #" + std::to_string(i) + " of @" + name.str() + " is " +
          input->typeString() + ", expected " + spec.str());
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<HostTensor>> CompiledFunction::callOnHost(
    llvm::StringRef name, llvm::ArrayRef<TensorSpec> arguments,
    llvm::ArrayRef<TensorSpec> results,
    llvm::ArrayRef<const HostTensor *> inputs,
    llvm::function_ref<llvm::Error(llvm::MutableArrayRef<void *>)> invoke) {
  if (llvm::Error error = checkInputs(name, arguments, inputs))
    return std::move(error);
  std::vector<HostTensor> outputs;
  for (const TensorSpec &spec : results)
    outputs.emplace_back(spec.kind, spec.shape);
  // Arguments, then results (the lowering made them trailing
  // out-parameters).
  PackedDescriptors packed;
  for (const HostTensor *input : inputs)
    packed.add(input->data(), input->getShape());
  for (HostTensor &output : outputs)
    packed.add(output.data(), output.getShape());
  if (llvm::Error error = invoke(packed.get()))
    return std::move(error);
  return outputs;
}
