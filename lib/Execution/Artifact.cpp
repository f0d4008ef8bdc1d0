//===- Artifact.cpp - Ahead-of-time compiled training steps ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Artifact.h"
#include "amp/Runtime/Collectives.h"

#include "llvm/Support/JSON.h"

#include <cmath>
#include <dlfcn.h>
#include <limits>

using namespace amp;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// The manifest
//===----------------------------------------------------------------------===//

static json::Array specsToJson(llvm::ArrayRef<TensorSpec> specs) {
  json::Array array;
  for (const TensorSpec &spec : specs)
    array.push_back(json::Object{{"type", elementName(spec.kind)},
                                 {"shape", json::Array(spec.shape)}});
  return array;
}

static json::Object memoryPlanToJson(const MemoryPlan &plan) {
  json::Object atPeak;
  for (const auto &[kind, bytes] : plan.atPeak)
    atPeak[kind] = int64_t(bytes);
  json::Object o{{"arena_bytes", int64_t(plan.arenaBytes)},
                 {"live_peak_bytes", int64_t(plan.livePeakBytes)},
                 {"buffers", int64_t(plan.buffers)},
                 {"unplanned_buffers", int64_t(plan.unplannedBuffers)},
                 {"unplanned_bytes", int64_t(plan.unplannedBytes)},
                 {"at_peak", std::move(atPeak)}};
  if (plan.recomputedValues) {
    o["recomputed_values"] = int64_t(plan.recomputedValues);
    o["recomputed_bytes"] = int64_t(plan.recomputedBytes);
    o["recomputed_gemms"] = int64_t(plan.recomputedGemms);
  }
  return o;
}

std::string amp::serializeMemoryPlan(const MemoryPlan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(memoryPlanToJson(plan));
  return text;
}

static json::Object functionToJson(const ArtifactFunctionInfo &function) {
  json::Object o{{"name", function.name},
                 {"arguments", specsToJson(function.arguments)},
                 {"results", specsToJson(function.results)}};
  if (!function.resultArguments.empty())
    o["in_place"] = json::Array(function.resultArguments);
  if (const MemoryPlan &plan = function.memoryPlan; !plan.empty())
    o["memory_plan"] = memoryPlanToJson(plan);
  return o;
}

static json::Array indices(llvm::ArrayRef<unsigned> values) {
  return json::Array(values);
}

std::string amp::serializeManifest(const ArtifactManifest &manifest) {
  const StepAbi &abi = manifest.abi;
  json::Array persistent, names, inits;
  for (const auto &[name, index] : abi.persistent)
    persistent.push_back(json::Array{name, index});
  for (const auto &[name, index] : abi.names)
    names.push_back(json::Array{name, index});
  for (const auto &[index, init] : manifest.inits)
    inits.push_back(json::Object{{"argument", index},
                                 {"kind", init.kind},
                                 {"value", init.value},
                                 {"fan_in", init.fanIn},
                                 {"fan_out", init.fanOut}});
  json::Object abiJson{{"input", abi.input},
                       {"labels", abi.labels},
                       {"state", indices(abi.state)},
                       {"params", indices(abi.params)},
                       {"masters", indices(abi.masters)},
                       {"scaler", indices(abi.scaler)},
                       {"num_results", abi.numResults},
                       {"persistent", std::move(persistent)},
                       {"names", std::move(names)},
                       {"input_names", json::Array(abi.inputNames)}};
  if (abi.lr)
    abiJson["lr"] = *abi.lr;
  json::Object evalLoss{{"label_smoothing", abi.evalLoss.labelSmoothing}};
  if (abi.evalLoss.ignoreIndex)
    evalLoss["ignore_index"] = *abi.evalLoss.ignoreIndex;
  abiJson["eval_loss"] = std::move(evalLoss);
  if (!abi.numerics.empty()) {
    json::Array sites;
    for (const NumericsSite &site : abi.numerics) {
      json::Object o;
      switch (site.kind) {
      case NumericsSite::Kind::Argument:
        o = json::Object{{"kind", "argument"}, {"argument", site.argument}};
        break;
      case NumericsSite::Kind::Constant:
        // JSON has no inf or NaN: a constant holding one is marked.
        o = json::Object{{"kind", "constant"}};
        if (std::isfinite(site.magnitude))
          o["magnitude"] = site.magnitude;
        else
          o["nonfinite"] = std::isnan(site.magnitude) ? "nan" : "inf";
        break;
      case NumericsSite::Kind::Op:
        o = json::Object{
            {"kind", "op"},          {"op", site.op},
            {"module", site.module}, {"file", site.file},
            {"line", site.line},     {"backward", site.backward},
            {"result", site.result}, {"inputs", json::Array(site.inputs)}};
        if (site.calibrated >= 0)
          o["calibrated"] = site.calibrated;
        break;
      }
      o["check"] = site.check;
      sites.push_back(std::move(o));
    }
    abiJson["numerics"] = std::move(sites);
  }
  bool inPlace = !manifest.step.resultArguments.empty() ||
                 !manifest.logits.resultArguments.empty();
  json::Object root{{"format", inPlace ? kArtifactFormat : kArtifactFormatV1},
                    {"backend", manifest.backend},
                    {"model", manifest.model},
                    {"opt_level", manifest.optLevel},
                    {"dtype", manifest.dtype},
                    {"optimizer", manifest.optimizer},
                    {"pipeline", manifest.pipeline},
                    {"step", functionToJson(manifest.step)},
                    {"logits", functionToJson(manifest.logits)},
                    {"abi", std::move(abiJson)},
                    {"inits", std::move(inits)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(root));
  return text;
}

namespace {
/// Reads the manifest's fields, remembering the first problem.
struct ManifestReader {
  std::string problem;

  bool fail(const llvm::Twine &message) {
    if (problem.empty())
      problem = message.str();
    return false;
  }
  bool read(const json::Object &o, llvm::StringRef key, std::string &out) {
    auto v = o.getString(key);
    if (!v)
      return fail("'" + key + "' is missing or not a string");
    out = v->str();
    return true;
  }
  bool read(const json::Object &o, llvm::StringRef key, unsigned &out) {
    auto v = o.getInteger(key);
    if (!v || *v < 0)
      return fail("'" + key + "' is missing or not a non-negative integer");
    out = unsigned(*v);
    return true;
  }
  bool read(const json::Object &o, llvm::StringRef key,
            llvm::SmallVectorImpl<unsigned> &out) {
    const json::Array *a = o.getArray(key);
    if (!a)
      return fail("'" + key + "' is missing or not an array");
    for (const json::Value &v : *a) {
      auto i = v.getAsInteger();
      if (!i || *i < 0)
        return fail("'" + key + "' holds a non-index");
      out.push_back(unsigned(*i));
    }
    return true;
  }
  bool read(const json::Object &o, llvm::StringRef key,
            llvm::SmallVectorImpl<TensorSpec> &out) {
    const json::Array *a = o.getArray(key);
    if (!a)
      return fail("'" + key + "' is missing or not an array");
    for (const json::Value &v : *a) {
      const json::Object *spec = v.getAsObject();
      std::string type;
      if (!spec || !read(*spec, "type", type))
        return fail("'" + key + "' holds a malformed tensor type");
      std::optional<ElementKind> kind = elementKindNamed(type);
      if (!kind)
        return fail("'" + key + "' holds unknown element type '" + type + "'");
      TensorSpec t{*kind, {}};
      const json::Array *shape = spec->getArray("shape");
      if (!shape)
        return fail("'" + key + "' holds a tensor type without a shape");
      for (const json::Value &d : *shape) {
        auto n = d.getAsInteger();
        if (!n || *n < 0)
          return fail("'" + key + "' holds a bad dimension");
        t.shape.push_back(*n);
      }
      out.push_back(std::move(t));
    }
    return true;
  }
  bool read(const json::Object &o, llvm::StringRef key,
            ArtifactFunctionInfo &out) {
    const json::Object *f = o.getObject(key);
    if (!f)
      return fail("'" + key + "' is missing");
    if (!read(*f, "name", out.name) || !read(*f, "arguments", out.arguments) ||
        !read(*f, "results", out.results))
      return false;
    if (const json::Value *v = f->get("in_place")) {
      const json::Array *a = v->getAsArray();
      if (!a)
        return fail("'in_place' of '" + key + "' is not an array");
      for (const json::Value &e : *a) {
        auto i = e.getAsInteger();
        if (!i || *i < -1)
          return fail("'in_place' of '" + key + "' holds a bad index");
        out.resultArguments.push_back(*i);
      }
      if (llvm::Error e = CompiledFunction::checkResultArguments(
              out.name, out.arguments, out.results, out.resultArguments))
        return fail(llvm::toString(std::move(e)));
    }
    if (const json::Value *v = f->get("memory_plan"))
      return read(*v, key, out.memoryPlan);
    return true;
  }
  /// A function's "memory_plan" (a report: only its form is checked).
  bool read(const json::Value &v, llvm::StringRef key, MemoryPlan &out) {
    const json::Object *o = v.getAsObject();
    auto bad = [&] { return fail("'memory_plan' of '" + key + "' is malformed"); };
    if (!o)
      return bad();
    for (auto [field, into] :
         {std::pair<const char *, uint64_t *>{"arena_bytes", &out.arenaBytes},
          {"live_peak_bytes", &out.livePeakBytes},
          {"buffers", &out.buffers},
          {"unplanned_buffers", &out.unplannedBuffers},
          {"unplanned_bytes", &out.unplannedBytes}}) {
      auto n = o->getInteger(field);
      if (!n || *n < 0)
        return bad();
      *into = uint64_t(*n);
    }
    // Absent without a memory budget.
    for (auto [field, into] : {std::pair<const char *, uint64_t *>{
                                   "recomputed_values", &out.recomputedValues},
                               {"recomputed_bytes", &out.recomputedBytes},
                               {"recomputed_gemms", &out.recomputedGemms}})
      if (const json::Value *value = o->get(field)) {
        auto n = value->getAsInteger();
        if (!n || *n < 0)
          return bad();
        *into = uint64_t(*n);
      }
    if (const json::Object *atPeak = o->getObject("at_peak"))
      for (const auto &[kind, bytes] : *atPeak) {
        auto n = bytes.getAsInteger();
        if (!n || *n < 0)
          return bad();
        out.atPeak.push_back({kind.str(), uint64_t(*n)});
      }
    llvm::stable_sort(out.atPeak,
                      [](auto &a, auto &b) { return a.second > b.second; });
    return true;
  }
};
} // namespace

llvm::Expected<ArtifactManifest> amp::parseManifest(llvm::StringRef text) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "bad artifact manifest: " + m);
  };
  auto value = json::parse(text);
  if (!value)
    return err(llvm::toString(value.takeError()));
  const json::Object *root = value->getAsObject();
  if (!root)
    return err("not a JSON object");
  auto format = root->getString("format");
  if (!format || (*format != kArtifactFormat && *format != kArtifactFormatV1))
    return err("format is '" + (format ? *format : "?") + "', expected '" +
               kArtifactFormat + "' or '" + kArtifactFormatV1 + "'");
  ArtifactManifest m;
  ManifestReader r;
  const json::Object *abi = root->getObject("abi");
  const json::Array *inits = root->getArray("inits");
  bool ok = r.read(*root, "backend", m.backend) &&
            r.read(*root, "model", m.model) &&
            r.read(*root, "opt_level", m.optLevel) &&
            r.read(*root, "dtype", m.dtype) &&
            r.read(*root, "optimizer", m.optimizer) &&
            r.read(*root, "step", m.step) && r.read(*root, "logits", m.logits);
  if (auto pipeline = root->getString("pipeline"))
    m.pipeline = pipeline->str();
  if (ok && !abi)
    ok = r.fail("'abi' is missing");
  if (ok)
    ok = r.read(*abi, "input", m.abi.input) &&
         r.read(*abi, "labels", m.abi.labels) &&
         r.read(*abi, "state", m.abi.state) &&
         r.read(*abi, "params", m.abi.params) &&
         r.read(*abi, "masters", m.abi.masters) &&
         r.read(*abi, "scaler", m.abi.scaler) &&
         r.read(*abi, "num_results", m.abi.numResults);
  if (ok && abi->get("lr")) {
    unsigned lr = 0;
    ok = r.read(*abi, "lr", lr);
    m.abi.lr = lr;
  }
  const json::Array *persistent = ok ? abi->getArray("persistent") : nullptr;
  if (ok && !persistent)
    ok = r.fail("'persistent' is missing");
  // (name, argument) pairs; "names" is absent in older artifacts.
  auto readPairs = [&](const json::Array *pairs, llvm::StringRef key,
                       llvm::SmallVector<std::pair<std::string, unsigned>> &to) {
    for (size_t i = 0; ok && pairs && i < pairs->size(); ++i) {
      const json::Array *pair = (*pairs)[i].getAsArray();
      std::optional<llvm::StringRef> name =
          pair && pair->size() == 2 ? (*pair)[0].getAsString() : std::nullopt;
      std::optional<int64_t> index =
          name ? (*pair)[1].getAsInteger() : std::nullopt;
      if (!index || *index < 0)
        ok = r.fail("'" + key + "' holds a malformed entry");
      else
        to.emplace_back(name->str(), unsigned(*index));
    }
  };
  readPairs(persistent, "persistent", m.abi.persistent);
  if (ok)
    readPairs(abi->getArray("names"), "names", m.abi.names);
  // The inputs' names; absent in older artifacts.
  if (const json::Array *inputNames =
          ok ? abi->getArray("input_names") : nullptr) {
    for (const json::Value &v : *inputNames) {
      std::optional<llvm::StringRef> name = v.getAsString();
      if (!name) {
        ok = r.fail("'input_names' holds a malformed entry");
        break;
      }
      m.abi.inputNames.push_back(name->str());
    }
  }
  // The cross-entropy's options evaluation scores by; absent in older
  // artifacts (plain cross-entropy).
  if (const json::Object *evalLoss =
          ok ? abi->getObject("eval_loss") : nullptr) {
    if (const json::Value *ignore = evalLoss->get("ignore_index")) {
      if (std::optional<int64_t> value = ignore->getAsInteger())
        m.abi.evalLoss.ignoreIndex = *value;
      else
        ok = r.fail("'eval_loss' has a malformed 'ignore_index'");
    }
    std::optional<double> smoothing = evalLoss->getNumber("label_smoothing");
    if (ok && (!smoothing || !(*smoothing >= 0.0 && *smoothing <= 1.0)))
      ok = r.fail("'eval_loss' has a malformed 'label_smoothing'");
    else if (ok)
      m.abi.evalLoss.labelSmoothing = *smoothing;
  }
  // check-numerics' site table; absent without it (and in older
  // artifacts).
  if (const json::Array *sites = ok ? abi->getArray("numerics") : nullptr) {
    for (size_t i = 0; ok && i < sites->size(); ++i) {
      const json::Object *o = (*sites)[i].getAsObject();
      std::optional<llvm::StringRef> kind =
          o ? o->getString("kind") : std::nullopt;
      NumericsSite site;
      if (!kind ||
          (*kind != "argument" && *kind != "constant" && *kind != "op")) {
        ok = r.fail("'numerics' holds a malformed entry");
        break;
      }
      site.kind = *kind == "argument"   ? NumericsSite::Kind::Argument
                  : *kind == "constant" ? NumericsSite::Kind::Constant
                                        : NumericsSite::Kind::Op;
      site.argument = unsigned(o->getInteger("argument").value_or(0));
      site.magnitude = o->getNumber("magnitude").value_or(0.0);
      if (std::optional<llvm::StringRef> bad = o->getString("nonfinite"))
        site.magnitude = *bad == "nan"
                             ? std::numeric_limits<double>::quiet_NaN()
                             : std::numeric_limits<double>::infinity();
      site.op = o->getString("op").value_or("").str();
      site.module = o->getString("module").value_or("").str();
      site.file = o->getString("file").value_or("").str();
      site.line = o->getInteger("line").value_or(0);
      site.backward = o->getBoolean("backward").value_or(false);
      site.result = o->getInteger("result").value_or(-1);
      site.check = o->getInteger("check").value_or(-1);
      site.calibrated = o->getNumber("calibrated").value_or(-1.0);
      if (const json::Array *inputs = o->getArray("inputs"))
        for (const json::Value &input : *inputs)
          site.inputs.push_back(input.getAsInteger().value_or(-1));
      if (llvm::any_of(site.inputs, [&](int64_t input) {
            return input < 0 || size_t(input) >= i;
          })) {
        ok = r.fail("'numerics' entry " + std::to_string(i) +
                    " reads an entry that does not come before it");
        break;
      }
      m.abi.numerics.push_back(std::move(site));
    }
    // Each measured entry has its own place in the step's last result.
    llvm::SmallVector<bool> taken;
    for (const NumericsSite &site : m.abi.numerics) {
      if (!ok || site.check < 0)
        continue;
      if (size_t(site.check) >= m.abi.numerics.size()) {
        ok = r.fail("'numerics' measures an entry at " +
                    std::to_string(site.check) + ", out of range");
        break;
      }
      taken.resize(std::max(taken.size(), size_t(site.check) + 1), false);
      if (taken[site.check]) {
        ok = r.fail("'numerics' measures two entries at " +
                    std::to_string(site.check));
        break;
      }
      taken[site.check] = true;
    }
    if (ok && !m.abi.numerics.empty() &&
        !llvm::all_of(taken, [](bool t) { return t; }))
      ok = r.fail("'numerics' leaves a place of the step's vector unused");
  }
  if (ok && !inits)
    ok = r.fail("'inits' is missing");
  for (size_t i = 0; ok && i < inits->size(); ++i) {
    const json::Object *o = (*inits)[i].getAsObject();
    InitSpec init;
    unsigned argument = 0;
    if (!o || !r.read(*o, "argument", argument) ||
        !r.read(*o, "kind", init.kind)) {
      ok = r.fail("'inits' holds a malformed entry");
      break;
    }
    init.value = o->getNumber("value").value_or(0.0);
    init.fanIn = o->getInteger("fan_in").value_or(0);
    init.fanOut = o->getInteger("fan_out").value_or(0);
    m.inits.emplace_back(argument, std::move(init));
  }
  if (!ok)
    return err(r.problem);
  if (m.backend != "cpu" && m.backend != "cuda")
    return err("unknown backend '" + m.backend + "'");
  size_t numArgs = m.step.arguments.size();
  auto inRange = [&](unsigned i) { return i < numArgs; };
  bool indicesOk =
      inRange(m.abi.input) && inRange(m.abi.labels) &&
      m.abi.input < m.abi.labels &&
      llvm::all_of(m.abi.state, inRange) &&
      llvm::all_of(m.abi.params, inRange) &&
      llvm::all_of(m.abi.masters, inRange) &&
      llvm::all_of(m.abi.scaler, inRange) &&
      (!m.abi.lr || inRange(*m.abi.lr)) &&
      llvm::all_of(m.abi.persistent,
                   [&](const auto &p) { return inRange(p.second); }) &&
      llvm::all_of(m.abi.names,
                   [&](const auto &p) { return inRange(p.second); }) &&
      llvm::all_of(m.inits, [&](const auto &p) { return inRange(p.first); }) &&
      m.abi.numResults == m.step.results.size();
  if (!indicesOk)
    return err("an argument index is out of range of @" + m.step.name + "'s " +
               llvm::Twine(numArgs) + " arguments");
  return m;
}

//===----------------------------------------------------------------------===//
// Loaded functions
//===----------------------------------------------------------------------===//

namespace {

using PackedEntry = void (*)(void **);

/// A function of an artifact: its types and packed entry point.
class ArtifactFunction : public CompiledFunction {
public:
  ArtifactFunction(ArtifactFunctionInfo info, PackedEntry entry)
      : info(std::move(info)), entry(entry) {}

  llvm::ArrayRef<TensorSpec> getArgumentSpecs() const override {
    return info.arguments;
  }
  llvm::ArrayRef<TensorSpec> getResultSpecs() const override {
    return info.results;
  }
  llvm::ArrayRef<int64_t> getResultArguments() const override {
    return info.resultArguments;
  }
  const MemoryPlan &getMemoryPlan() const override { return info.memoryPlan; }

protected:
  ArtifactFunctionInfo info;
  PackedEntry entry;
};

/// A function whose arguments and results live in host memory (the CPU
/// backend).
class HostArtifactFunction final : public HostResults<ArtifactFunction> {
public:
  using HostResults::HostResults;

  llvm::Expected<std::vector<HostTensor>>
  callReusing(llvm::ArrayRef<const HostTensor *> inputs,
              std::vector<HostTensor> &reuse) override {
    return run(inputs, reuse, /*update=*/false);
  }

  llvm::Expected<std::vector<HostTensor>>
  callUpdating(llvm::ArrayRef<HostTensor *> inputs,
               std::vector<HostTensor> &reuse) override {
    std::vector<const HostTensor *> read(inputs.begin(), inputs.end());
    return run(read, reuse, /*update=*/true);
  }

private:
  llvm::Expected<std::vector<HostTensor>>
  run(llvm::ArrayRef<const HostTensor *> inputs, std::vector<HostTensor> &reuse,
      bool update) {
    return callOnHost(
        info.name, info.arguments, info.results, inputs,
        [&](llvm::MutableArrayRef<void *> packed) {
          entry(packed.data());
          return llvm::Error::success();
        },
        &reuse, info.resultArguments, update);
  }
};

/// An artifact runtime's entry point `set` that installs a communicator,
/// when that runtime's layout of it (entry point `abi`) is this build's: a
/// communicator crosses into the artifact only then (an artifact of another
/// amp build may not agree). Null otherwise.
using CommunicatorInstaller = void (*)(Communicator *);
CommunicatorInstaller findCommunicatorInstaller(void *handle, const char *abi,
                                                const char *set) {
  auto layout = reinterpret_cast<int64_t (*)()>(dlsym(handle, abi));
  if (!layout || layout() != kCommunicatorAbi)
    return nullptr;
  return reinterpret_cast<CommunicatorInstaller>(dlsym(handle, set));
}

/// The runtime entry points a CUDA artifact exports (its runtime is linked
/// into it), found with dlsym.
struct CudaEntryPoints {
  void *(*streamCreate)();
  void (*streamSynchronize)(void *);
  void *(*memAlloc)(uint64_t, void *, bool);
  void (*memFree)(void *, void *);
  void (*memcpy)(void *, void *, size_t, void *);
  int (*takeError)(char *, size_t);
  void (*memoryStats)(uint64_t *); // optional

  /// The runtime's first recorded failure, as an error; success if none.
  llvm::Error takeError_() const {
    char buffer[1024];
    if (!takeError(buffer, sizeof(buffer)))
      return llvm::Error::success();
    return llvm::createStringError(buffer);
  }
};

/// A function whose arguments and results live in device memory: inputs are
/// copied to the device, results back, on the runtime's one stream.
class CudaArtifactFunction final : public ArtifactFunction {
public:
  CudaArtifactFunction(ArtifactFunctionInfo info, PackedEntry entry,
                       const CudaEntryPoints &cuda, void *stream)
      : ArtifactFunction(std::move(info), entry), cuda(cuda), stream(stream) {}

  llvm::Expected<std::vector<HostTensor>>
  call(llvm::ArrayRef<const HostTensor *> inputs) override {
    if (llvm::Error error = checkInputs(info.name, info.arguments, inputs))
      return std::move(error);
    std::vector<void *> args, out;
    for (auto [i, input] : llvm::enumerate(inputs))
      if (void *ptr = args.emplace_back(alloc(info.arguments[i])))
        cuda.memcpy(ptr, const_cast<void *>(input->data()),
                    input->getSizeInBytes(), stream);
    // A result written in place is read back from its argument's buffer
    // (a copy of the input, on the device).
    for (auto [r, spec] : llvm::enumerate(info.results))
      out.push_back(getResultArgument(r) >= 0 ? nullptr : alloc(spec));
    auto outputs = runOnDevice(args, out, [](size_t) { return true; });
    for (void *ptr : llvm::concat<void *>(args, out))
      if (ptr)
        cuda.memFree(ptr, stream);
    return outputs;
  }

  /// A device buffer for a tensor of `spec` (null, error recorded, when
  /// there is no memory).
  void *alloc(const TensorSpec &spec) {
    size_t bytes = spec.getNumElements() * elementBytes(spec.kind);
    return cuda.memAlloc(std::max<size_t>(bytes, 1), stream, false);
  }

  /// Runs the function on device buffers: `args` for its arguments, `out`
  /// for its results; copies the results `fetch` picks to the host and
  /// waits for the stream. Errors (including one recorded before) name the
  /// function.
  llvm::Expected<std::vector<HostTensor>>
  runOnDevice(llvm::ArrayRef<void *> args, llvm::ArrayRef<void *> out,
              llvm::function_ref<bool(size_t)> fetch) {
    std::vector<HostTensor> values;
    llvm::Error error = cuda.takeError_();
    if (!error) {
      // Arguments, then the results not written into an argument.
      PackedDescriptors packed;
      for (auto [i, spec] : llvm::enumerate(info.arguments))
        packed.add(args[i], spec.shape);
      for (auto [r, spec] : llvm::enumerate(info.results))
        if (getResultArgument(r) < 0)
          packed.add(out[r], spec.shape);
      entry(packed.get().data());
      for (auto [r, spec] : llvm::enumerate(info.results))
        if (fetch(r)) {
          values.emplace_back(spec.kind, spec.shape);
          int64_t a = getResultArgument(r);
          cuda.memcpy(values.back().data(), a >= 0 ? args[a] : out[r],
                      values.back().getSizeInBytes(), stream);
        }
      cuda.streamSynchronize(stream);
      error = cuda.takeError_();
    }
    if (error)
      return llvm::createStringError(
          "@" + info.name + " on the GPU: " + llvm::toString(std::move(error)));
    return values;
  }

  /// A session whose arguments live in device memory (this the step,
  /// `logitsFn` its logits function).
  llvm::Expected<std::unique_ptr<StepSession>>
  openSession(CudaArtifactFunction &logitsFn);

private:
  friend class CudaSession;
  CudaEntryPoints cuda;
  void *stream;
};

/// The step's arguments in device buffers. The state the step updates in
/// place (getResultArguments: parameters, masters, moments, scaler state)
/// stays in its one buffer. Any other result routed to an argument is
/// written into that argument's second buffer, and the two swap after the
/// step. The state never crosses the bus.
class CudaSession final : public StepSession {
public:
  CudaSession(CudaArtifactFunction &stepFn, CudaArtifactFunction &logitsFn)
      : stepFn(stepFn), logitsFn(logitsFn), cuda(stepFn.cuda),
        stream(stepFn.stream) {}

  ~CudaSession() override {
    for (void *ptr : buffers)
      cuda.memFree(ptr, stream);
    for (void *ptr : spares)
      cuda.memFree(ptr, stream);
  }

  /// Allocates a buffer per argument.
  llvm::Error allocate() {
    for (const TensorSpec &spec : specs()) {
      buffers.push_back(alloc(spec));
      spares.push_back(nullptr);
    }
    return cuda.takeError_();
  }

  llvm::Error set(unsigned i, const HostTensor &value) override {
    if (llvm::Error e = checkArgument(specs(), i, value))
      return e;
    // From pageable memory the copy is staged before it returns: `value`
    // may go away at once.
    cuda.memcpy(buffers[i], const_cast<void *>(value.data()),
                value.getSizeInBytes(), stream);
    return cuda.takeError_();
  }

  llvm::Expected<HostTensor> get(unsigned i) override {
    if (i >= buffers.size())
      return llvm::createStringError("no argument #" + std::to_string(i));
    HostTensor value(specs()[i].kind, specs()[i].shape);
    cuda.memcpy(value.data(), buffers[i], value.getSizeInBytes(), stream);
    cuda.streamSynchronize(stream);
    if (llvm::Error e = cuda.takeError_())
      return std::move(e);
    return value;
  }

  llvm::Expected<std::vector<HostTensor>>
  step(llvm::ArrayRef<ResultRoute> routes) override {
    if (llvm::Error e = checkRoutes(stepFn, routes))
      return std::move(e);
    llvm::ArrayRef<TensorSpec> results = stepFn.getResultSpecs();
    std::vector<void *> out(results.size(), nullptr), temps;
    for (auto [r, route] : llvm::enumerate(routes)) {
      // Written into its argument's buffer by the step itself.
      if (stepFn.getResultArgument(r) >= 0)
        continue;
      if (route.toArgument < 0) {
        out[r] = alloc(results[r]);
        temps.push_back(out[r]);
        continue;
      }
      void *&spare = spares[route.toArgument];
      if (!spare)
        spare = alloc(results[r]);
      out[r] = spare;
    }
    auto toHost =
        runAndFetch(stepFn, out, [&](size_t r) { return routes[r].toHost; });
    for (void *ptr : temps)
      cuda.memFree(ptr, stream);
    if (!toHost)
      return toHost.takeError();
    for (auto [r, route] : llvm::enumerate(routes))
      if (route.toArgument >= 0 && stepFn.getResultArgument(r) < 0)
        std::swap(buffers[route.toArgument], spares[route.toArgument]);
    return toHost;
  }

  llvm::Expected<std::vector<HostTensor>> logits() override {
    llvm::ArrayRef<TensorSpec> results = logitsFn.getResultSpecs();
    std::vector<void *> out;
    for (const TensorSpec &spec : results)
      out.push_back(alloc(spec));
    auto values = runAndFetch(logitsFn, out, [](size_t) { return true; });
    for (void *ptr : out)
      cuda.memFree(ptr, stream);
    return values;
  }

  std::optional<MemoryStats> getDeviceMemory() override {
    if (!cuda.memoryStats)
      return std::nullopt;
    uint64_t stats[4] = {0, 0, 0, 0};
    cuda.memoryStats(stats);
    return MemoryStats{stats[0], stats[1], stats[2], stats[3]};
  }

private:
  llvm::ArrayRef<TensorSpec> specs() const { return stepFn.getArgumentSpecs(); }
  void *alloc(const TensorSpec &spec) { return stepFn.alloc(spec); }

  /// Runs `fn` on the first of the session's argument buffers.
  llvm::Expected<std::vector<HostTensor>>
  runAndFetch(CudaArtifactFunction &fn, llvm::ArrayRef<void *> out,
              llvm::function_ref<bool(size_t)> fetch) {
    return fn.runOnDevice(
        llvm::ArrayRef<void *>(buffers).take_front(fn.info.arguments.size()),
        out, fetch);
  }

  CudaArtifactFunction &stepFn, &logitsFn;
  CudaEntryPoints cuda;
  void *stream;
  std::vector<void *> buffers, spares;
};

llvm::Expected<std::unique_ptr<StepSession>>
CudaArtifactFunction::openSession(CudaArtifactFunction &logitsFn) {
  if (llvm::Error e = StepSession::checkFunctions(*this, logitsFn))
    return std::move(e);
  auto session = std::make_unique<CudaSession>(*this, logitsFn);
  if (llvm::Error e = session->allocate())
    return llvm::createStringError("allocating the step's arguments on the "
                                   "GPU: " +
                                   llvm::toString(std::move(e)));
  return session;
}

} // namespace

Artifact::~Artifact() {
  step.reset();
  logits.reset();
  // The artifact's code stays mapped: the runtime linked into it may still
  // have state (streams, cached allocations) that outlives this object.
}

llvm::Expected<std::unique_ptr<Artifact>> Artifact::load(llvm::StringRef path,
                                                         bool openDevice) {
  auto err = [&](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + m);
  };
  std::string pathString = path.str();
  // A relative path without a slash would be searched for on the library
  // path: name it relative to the working directory instead.
  if (pathString.find('/') == std::string::npos)
    pathString = "./" + pathString;
  void *handle = dlopen(pathString.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return err(llvm::Twine("cannot load the artifact: ") + dlerror());
  std::unique_ptr<Artifact> artifact(new Artifact());
  artifact->handle = handle;
  auto *text =
      static_cast<const char *>(dlsym(handle, kArtifactManifestSymbol));
  if (!text)
    return err("not an amp artifact (no " +
               llvm::Twine(kArtifactManifestSymbol) + ")");
  auto manifest = parseManifest(text);
  if (!manifest)
    return err(llvm::toString(manifest.takeError()));
  artifact->manifest = std::move(*manifest);
  const ArtifactManifest &m = artifact->manifest;

  auto entryOf = [&](const ArtifactFunctionInfo &f) {
    return reinterpret_cast<PackedEntry>(
        dlsym(handle, (kArtifactEntryPrefix + f.name).c_str()));
  };
  PackedEntry stepEntry = entryOf(m.step), logitsEntry = entryOf(m.logits);
  if (!stepEntry || !logitsEntry)
    return err("no entry point " + llvm::Twine(kArtifactEntryPrefix) +
               (stepEntry ? m.logits.name : m.step.name));
  if (m.backend == "cpu") {
    // The CPU runtime's process set-up (malloc keeps freed step buffers),
    // where the artifact links the runtime.
    if (auto init =
            reinterpret_cast<void (*)()>(dlsym(handle, "amp_cpu_runtime_init")))
      init();
    artifact->setCpuThreads = reinterpret_cast<void (*)(int64_t)>(
        dlsym(handle, "amp_cpu_set_num_threads"));
    artifact->getCpuThreads = reinterpret_cast<int64_t (*)()>(
        dlsym(handle, "amp_cpu_get_num_threads"));
    artifact->cpuMemoryStats = reinterpret_cast<void (*)(uint64_t *, uint64_t *)>(
        dlsym(handle, "amp_cpu_memory_stats"));
    artifact->resetCpuMemoryPeak = reinterpret_cast<void (*)()>(
        dlsym(handle, "amp_cpu_memory_reset_peak"));
    if (CommunicatorInstaller set = findCommunicatorInstaller(
            handle, "amp_cpu_communicator_abi", "amp_cpu_set_communicator"))
      artifact->setCommunicator = [set](Communicator *communicator) {
        set(communicator);
        return std::string();
      };
    artifact->step = std::make_unique<HostArtifactFunction>(m.step, stepEntry);
    artifact->logits =
        std::make_unique<HostArtifactFunction>(m.logits, logitsEntry);
    return artifact;
  }
  CudaEntryPoints cuda;
  bool found = true;
  auto symbol = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, name));
    found &= fn != nullptr;
  };
  symbol(cuda.streamCreate, "mgpuStreamCreate");
  symbol(cuda.streamSynchronize, "mgpuStreamSynchronize");
  symbol(cuda.memAlloc, "mgpuMemAlloc");
  symbol(cuda.memFree, "mgpuMemFree");
  symbol(cuda.memcpy, "mgpuMemcpy");
  symbol(cuda.takeError, "amp_cuda_take_error");
  cuda.memoryStats = reinterpret_cast<void (*)(uint64_t *)>(
      dlsym(handle, "amp_cuda_memory_stats"));
  if (!found)
    return err("a CUDA artifact without the CUDA runtime's entry points");
  // NCCL starts over the job's communicator in the artifact's runtime;
  // what failed is the runtime's recorded error.
  if (CommunicatorInstaller set = findCommunicatorInstaller(
          handle, "amp_cuda_communicator_abi", "amp_cuda_set_communicator"))
    artifact->setCommunicator = [set, cuda](Communicator *communicator) {
      set(communicator);
      char buffer[1024];
      return cuda.takeError(buffer, sizeof(buffer)) ? std::string(buffer)
                                                    : std::string();
    };
  if (!openDevice)
    return artifact;
  void *stream = cuda.streamCreate();
  if (llvm::Error e = cuda.takeError_())
    return err(llvm::toString(std::move(e)));
  artifact->step =
      std::make_unique<CudaArtifactFunction>(m.step, stepEntry, cuda, stream);
  artifact->logits = std::make_unique<CudaArtifactFunction>(
      m.logits, logitsEntry, cuda, stream);
  return artifact;
}

int64_t ArtifactManifest::getRanks() const {
  llvm::SmallVector<llvm::StringRef> options;
  llvm::StringRef(pipeline).split(options, ' ', -1, false);
  for (llvm::StringRef option : options) {
    int64_t ranks = 0;
    if (option.consume_front("ranks=") && !option.getAsInteger(10, ranks))
      return ranks;
  }
  return 1;
}

CompiledStep Artifact::getCompiledStep() {
  CompiledStep compiled;
  compiled.step = step.get();
  compiled.logits = logits.get();
  compiled.abi = manifest.abi;
  compiled.inits = manifest.inits;
  compiled.setCpuThreads = setCpuThreads;
  compiled.getCpuThreads = getCpuThreads;
  compiled.cpuMemoryStats = cpuMemoryStats;
  compiled.resetCpuMemoryPeak = resetCpuMemoryPeak;
  compiled.ranks = manifest.getRanks();
  compiled.setCommunicator = setCommunicator;
  if (manifest.backend == "cuda" && step)
    compiled.openSession = [this]() {
      return static_cast<CudaArtifactFunction &>(*step).openSession(
          static_cast<CudaArtifactFunction &>(*logits));
    };
  return compiled;
}
