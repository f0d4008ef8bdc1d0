//===- CompiledFunction.cpp - A compiled function the host calls ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CompiledFunction.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace amp;

int64_t TensorSpec::getNumElements() const { return numElements(shape); }

std::string TensorSpec::str() const { return tensorTypeString(kind, shape); }

std::string MemoryPlan::str() const {
  auto mib = [](uint64_t bytes) {
    return llvm::formatv("{0:f1} MiB", bytes / 1048576.0).str();
  };
  std::string text = mib(arenaBytes) + " arena for " +
                     std::to_string(buffers) + " buffers";
  if (!atPeak.empty()) {
    text += " (at the peak:";
    for (auto [i, part] : llvm::enumerate(atPeak))
      text += (i ? ", " : " ") + part.first + " " + mib(part.second);
    text += ")";
  }
  if (unplannedBuffers)
    text += "; " + std::to_string(unplannedBuffers) +
            " allocated in loops or of dynamic size";
  if (recomputedValues)
    text +=
        "; " + std::to_string(recomputedValues) + " value" +
        (recomputedValues == 1 ? "" : "s") + " recomputed in backward (" +
        mib(recomputedBytes) +
        (recomputedGemms ? ", " + std::to_string(recomputedGemms) + " GEMM" +
                               (recomputedGemms == 1 ? "" : "s") + " again"
                         : "") +
        ")";
  return text;
}

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

llvm::Expected<std::vector<HostTensor>>
CompiledFunction::callUpdating(llvm::ArrayRef<HostTensor *> inputs,
                               std::vector<HostTensor> &reuse) {
  std::vector<const HostTensor *> read(inputs.begin(), inputs.end());
  auto out = callReusing(read, reuse);
  if (!out)
    return out;
  // callReusing wrote the in-place results into copies: into the inputs
  // with them, as the contract says.
  llvm::ArrayRef<int64_t> inPlace = getResultArguments();
  for (auto [r, a] : llvm::enumerate(inPlace)) {
    if (a < 0 || r >= out->size() || size_t(a) >= inputs.size())
      continue;
    HostTensor &value = (*out)[r];
    std::memcpy(inputs[a]->data(), value.data(), value.getSizeInBytes());
    value = HostTensor::borrow(value.getKind(), value.getShape(),
                               inputs[a]->data());
  }
  return out;
}

llvm::Error CompiledFunction::checkResultArguments(
    llvm::StringRef name, llvm::ArrayRef<TensorSpec> arguments,
    llvm::ArrayRef<TensorSpec> results,
    llvm::ArrayRef<int64_t> resultArguments) {
  if (resultArguments.empty())
    return llvm::Error::success();
  auto fail = [&](const std::string &what) {
    return llvm::createStringError("the in-place results of @" + name.str() +
                                   ": " + what);
  };
  if (resultArguments.size() != results.size())
    return fail(std::to_string(resultArguments.size()) + " entries for " +
                std::to_string(results.size()) + " results");
  std::vector<bool> seen(arguments.size(), false);
  for (auto [r, a] : llvm::enumerate(resultArguments)) {
    if (a < 0)
      continue;
    if (size_t(a) >= arguments.size())
      return fail("result #" + std::to_string(r) + " goes into argument #" +
                  std::to_string(a) + " of " +
                  std::to_string(arguments.size()));
    if (seen[a])
      return fail("two results go into argument #" + std::to_string(a));
    seen[a] = true;
    if (arguments[a].kind != results[r].kind ||
        arguments[a].shape != results[r].shape)
      return fail("result #" + std::to_string(r) + " is " + results[r].str() +
                  ", argument #" + std::to_string(a) + " is " +
                  arguments[a].str());
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<HostTensor>> CompiledFunction::callOnHost(
    llvm::StringRef name, llvm::ArrayRef<TensorSpec> arguments,
    llvm::ArrayRef<TensorSpec> results,
    llvm::ArrayRef<const HostTensor *> inputs,
    llvm::function_ref<llvm::Error(llvm::MutableArrayRef<void *>)> invoke,
    std::vector<HostTensor> *reuse, llvm::ArrayRef<int64_t> resultArguments,
    bool updateInputs) {
  if (llvm::Error error = checkInputs(name, arguments, inputs))
    return std::move(error);
  auto inPlace = [&](size_t r) {
    return r < resultArguments.size() ? resultArguments[r] : int64_t(-1);
  };
  // The compiled code takes its arguments for distinct buffers (noalias):
  // one it writes must not be another's memory.
  if (updateInputs) {
    llvm::DenseMap<const void *, unsigned> uses;
    for (const HostTensor *input : inputs)
      if (input->getSizeInBytes())
        ++uses[input->data()];
    for (int64_t a : resultArguments)
      if (a >= 0 && inputs[a]->getSizeInBytes() &&
          uses.lookup(inputs[a]->data()) > 1)
        return llvm::createStringError(
            "argument #" + std::to_string(a) + " of @" + name.str() +
            ", which the call updates in place, shares its memory with "
            "another argument");
  }
  // Where each argument's elements are: its input, or the copy a result
  // written in place replaces it by (a call that updates no input).
  std::vector<const void *> argumentData;
  for (const HostTensor *input : inputs)
    argumentData.push_back(input->data());
  llvm::SmallPtrSet<const void *, 16> read;
  for (const HostTensor *input : inputs)
    read.insert(input->data());
  std::vector<HostTensor> outputs;
  outputs.reserve(results.size());
  for (auto [r, spec] : llvm::enumerate(results)) {
    if (int64_t a = inPlace(r); a >= 0) {
      void *data = const_cast<void *>(inputs[a]->data());
      if (updateInputs) {
        outputs.push_back(HostTensor::borrow(spec.kind, spec.shape, data));
      } else {
        outputs.push_back(inputs[a]->clone());
        argumentData[a] = outputs.back().data();
      }
      continue;
    }
    // A reused tensor owns elements of the result's type that this call
    // does not read; the compiled code writes every element of a result
    // (the step tests compare steps on reused buffers with fresh ones).
    HostTensor *old = reuse && r < reuse->size() ? &(*reuse)[r] : nullptr;
    if (old && !old->isBorrowed() && old->data() &&
        !read.contains(old->data()) && old->getKind() == spec.kind &&
        old->getShape() == llvm::ArrayRef<int64_t>(spec.shape))
      outputs.push_back(std::move(*old));
    else
      outputs.emplace_back(spec.kind, spec.shape);
  }
  // Arguments, then the results not written in place (the lowering made
  // them trailing out-parameters).
  PackedDescriptors packed;
  for (auto [i, input] : llvm::enumerate(inputs))
    packed.add(argumentData[i], input->getShape());
  for (auto [r, output] : llvm::enumerate(outputs))
    if (inPlace(r) < 0)
      packed.add(output.data(), output.getShape());
  if (llvm::Error error = invoke(packed.get()))
    return std::move(error);
  return outputs;
}

StepSession::~StepSession() = default;

llvm::Expected<std::vector<HostTensor>>
StepSession::stepWith(llvm::ArrayRef<ResultRoute> routes,
                      llvm::ArrayRef<std::pair<unsigned, HostTensor>> inputs) {
  for (const auto &[i, value] : inputs)
    if (llvm::Error e = set(i, value))
      return std::move(e);
  return step(routes);
}

llvm::Error StepSession::checkFunctions(const CompiledFunction &step,
                                        const CompiledFunction &logits) {
  llvm::ArrayRef<TensorSpec> s = step.getArgumentSpecs(),
                             l = logits.getArgumentSpecs();
  if (l.size() > s.size())
    return llvm::createStringError(
        "the logits function takes " + std::to_string(l.size()) +
        " arguments, more than the step's " + std::to_string(s.size()));
  for (auto [i, spec] : llvm::enumerate(l))
    if (spec.kind != s[i].kind || spec.shape != s[i].shape)
      return llvm::createStringError(
          "argument #" + std::to_string(i) + " of the logits function is " +
          spec.str() + ", the step's is " + s[i].str());
  return llvm::Error::success();
}

llvm::Error StepSession::checkRoutes(const CompiledFunction &step,
                                     llvm::ArrayRef<ResultRoute> routes) {
  llvm::ArrayRef<TensorSpec> args = step.getArgumentSpecs(),
                             results = step.getResultSpecs();
  if (routes.size() != results.size())
    return llvm::createStringError(
        "routes for " + std::to_string(routes.size()) +
        " results of a step with " + std::to_string(results.size()));
  std::vector<bool> routed(args.size(), false);
  for (auto [r, route] : llvm::enumerate(routes)) {
    if (int64_t a = step.getResultArgument(r); a >= 0 && a != route.toArgument)
      return llvm::createStringError(
          "result #" + std::to_string(r) + " is written into argument #" +
          std::to_string(a) + " in place; it cannot be routed " +
          (route.toArgument < 0
               ? std::string("elsewhere")
               : "to argument #" + std::to_string(route.toArgument)));
    if (route.toArgument < 0)
      continue;
    if (size_t(route.toArgument) < args.size() && routed[route.toArgument])
      return llvm::createStringError("two results routed to argument #" +
                                     std::to_string(route.toArgument));
    if (size_t(route.toArgument) < args.size())
      routed[route.toArgument] = true;
    if (size_t(route.toArgument) >= args.size())
      return llvm::createStringError("result #" + std::to_string(r) +
                                     " routed to argument #" +
                                     std::to_string(route.toArgument) + " of " +
                                     std::to_string(args.size()));
    const TensorSpec &a = args[route.toArgument];
    if (a.kind != results[r].kind || a.shape != results[r].shape)
      return llvm::createStringError(
          "result #" + std::to_string(r) + " is " + results[r].str() +
          ", argument #" + std::to_string(route.toArgument) + " is " + a.str());
  }
  return llvm::Error::success();
}

llvm::Error StepSession::checkArgument(llvm::ArrayRef<TensorSpec> specs,
                                       unsigned i, const HostTensor &value) {
  if (i >= specs.size())
    return llvm::createStringError("no argument #" + std::to_string(i));
  const TensorSpec &spec = specs[i];
  if (value.getKind() != spec.kind ||
      value.getShape() != llvm::ArrayRef<int64_t>(spec.shape))
    return llvm::createStringError("argument #" + std::to_string(i) + " is " +
                                   spec.str() + ", got " + value.typeString());
  return llvm::Error::success();
}

namespace {
/// Arguments in host memory; each call passes them by pointer.
class HostSession final : public StepSession {
public:
  HostSession(CompiledFunction &stepFn, CompiledFunction &logitsFn)
      : stepFn(stepFn), logitsFn(logitsFn) {
    for (const TensorSpec &spec : stepFn.getArgumentSpecs())
      args.emplace_back(spec.kind, spec.shape);
    adopted.assign(args.size(), false);
  }

  llvm::Error set(unsigned i, const HostTensor &value) override {
    if (llvm::Error e = checkArgument(stepFn.getArgumentSpecs(), i, value))
      return e;
    if (adopted[i])
      copyInto(args[i], value);
    else
      args[i] = value;
    return llvm::Error::success();
  }

  llvm::Error take(unsigned i, HostTensor value) override {
    if (value.isBorrowed() || (i < adopted.size() && adopted[i]))
      return set(i, value);
    if (llvm::Error e = checkArgument(stepFn.getArgumentSpecs(), i, value))
      return e;
    args[i] = std::move(value);
    return llvm::Error::success();
  }

  llvm::Expected<HostTensor> get(unsigned i) override {
    if (i >= args.size())
      return llvm::createStringError("no argument #" + std::to_string(i));
    // An adopted argument's value, as any other's, is the caller's to keep.
    return adopted[i] ? args[i].clone() : args[i];
  }

  llvm::Expected<bool> adopt(unsigned i, void *data) override {
    if (i >= args.size())
      return llvm::createStringError("no argument #" + std::to_string(i));
    if (!data || reinterpret_cast<uintptr_t>(data) % 64 != 0)
      return false;
    const TensorSpec &spec = stepFn.getArgumentSpecs()[i];
    size_t bytes = args[i].getSizeInBytes();
    // Two arguments in overlapping memory would each be updated over the
    // other's values.
    auto *begin = static_cast<const char *>(data);
    for (auto [k, arg] : llvm::enumerate(args)) {
      if (k == i || !adopted[k])
        continue;
      auto *other = static_cast<const char *>(arg.data());
      if (begin < other + arg.getSizeInBytes() && other < begin + bytes)
        return llvm::createStringError("argument #" + std::to_string(i) +
                                       " would share memory with argument #" +
                                       std::to_string(k));
    }
    HostTensor home = HostTensor::borrow(spec.kind, spec.shape, data);
    copyInto(home, args[i]);
    args[i] = std::move(home);
    adopted[i] = true;
    return true;
  }

  llvm::Expected<std::vector<HostTensor>>
  step(llvm::ArrayRef<ResultRoute> routes) override {
    if (llvm::Error e = checkRoutes(stepFn, routes))
      return std::move(e);
    // The state the step updates in place is the session's own: a borrowed
    // value there (stepWith's) is copied first, so the caller's memory is
    // only read.
    for (int64_t a : stepFn.getResultArguments())
      if (a >= 0 && args[a].isBorrowed() && !adopted[a])
        args[a] = args[a].clone();
    std::vector<HostTensor *> mutableArgs;
    for (HostTensor &arg : args)
      mutableArgs.push_back(&arg);
    auto out = stepFn.callUpdating(mutableArgs, spare);
    spare.clear();
    if (!out)
      return out.takeError();
    // Placeholders without elements (never reused) where no argument is
    // replaced.
    spare.resize(out->size(), HostTensor::borrow(ElementKind::F32, {}, nullptr));
    std::vector<HostTensor> toHost;
    for (auto [r, route] : llvm::enumerate(routes)) {
      if (int64_t a = stepFn.getResultArgument(r); a >= 0) {
        // Already in its argument (the session's own): the host gets a
        // copy.
        if (route.toHost)
          toHost.push_back(adopted[a] ? args[a].clone() : args[a]);
        continue;
      }
      if (route.toHost && route.toArgument >= 0)
        toHost.push_back((*out)[r]);
      else if (route.toHost)
        toHost.push_back(std::move((*out)[r]));
      if (route.toArgument >= 0 && adopted[route.toArgument]) {
        // The caller's memory stays the argument's home; the result's
        // buffer holds this result next step.
        copyInto(args[route.toArgument], (*out)[r]);
        spare[r] = std::move((*out)[r]);
      } else if (route.toArgument >= 0) {
        // The value it replaces holds this result next step.
        std::swap(spare[r], args[route.toArgument]);
        args[route.toArgument] = std::move((*out)[r]);
      }
    }
    return toHost;
  }

  llvm::Expected<std::vector<HostTensor>> logits() override {
    return logitsFn.call(pointers(logitsFn.getArgumentSpecs().size()));
  }

  llvm::Expected<std::vector<HostTensor>> stepWith(
      llvm::ArrayRef<ResultRoute> routes,
      llvm::ArrayRef<std::pair<unsigned, HostTensor>> inputs) override {
    // The inputs take their arguments' places for the call (views are
    // read in place); the session's own values go back afterwards.
    std::vector<std::pair<unsigned, HostTensor>> own;
    for (const auto &[i, value] : inputs) {
      llvm::Error e = checkArgument(stepFn.getArgumentSpecs(), i, value);
      if (!e && adopted[i])
        e = llvm::createStringError(
            "argument #" + std::to_string(i) +
            " lives in memory the session was given (adopt): set it instead");
      if (e) {
        restore(own);
        return std::move(e);
      }
      own.emplace_back(i, value);
      std::swap(args[i], own.back().second);
    }
    auto results = step(routes);
    restore(own);
    return results;
  }

private:
  /// Puts back the arguments stepWith replaced (last first: an index given
  /// twice gets its original value).
  void restore(std::vector<std::pair<unsigned, HostTensor>> &own) {
    for (auto &[i, value] : llvm::reverse(own))
      std::swap(args[i], value);
  }

  /// Copies `value`'s elements into `home` (same type; nothing where they
  /// are already there).
  static void copyInto(HostTensor &home, const HostTensor &value) {
    if (home.data() != value.data())
      std::memcpy(home.data(), value.data(), home.getSizeInBytes());
  }

  std::vector<const HostTensor *> pointers(size_t count) const {
    std::vector<const HostTensor *> p;
    for (size_t i = 0; i < count; ++i)
      p.push_back(&args[i]);
    return p;
  }

  CompiledFunction &stepFn, &logitsFn;
  std::vector<HostTensor> args;
  /// Which arguments live in the caller's memory (adopt).
  std::vector<bool> adopted;
  /// The arguments the last step's results replaced: storage for the next
  /// step's results (callReusing).
  std::vector<HostTensor> spare;
};
} // namespace

llvm::Expected<std::unique_ptr<StepSession>>
amp::openHostSession(CompiledFunction &step, CompiledFunction &logits) {
  if (llvm::Error e = StepSession::checkFunctions(step, logits))
    return std::move(e);
  return std::make_unique<HostSession>(step, logits);
}
