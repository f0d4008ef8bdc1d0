//===- Artifact.cpp - Ahead-of-time compiled training steps ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Artifact.h"

#include "llvm/Support/JSON.h"

#include <dlfcn.h>

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

static json::Object functionToJson(const ArtifactFunctionInfo &function) {
  return json::Object{{"name", function.name},
                      {"arguments", specsToJson(function.arguments)},
                      {"results", specsToJson(function.results)}};
}

static json::Array indices(llvm::ArrayRef<unsigned> values) {
  return json::Array(values);
}

std::string amp::serializeManifest(const ArtifactManifest &manifest) {
  const StepAbi &abi = manifest.abi;
  json::Array persistent, inits;
  for (const auto &[name, index] : abi.persistent)
    persistent.push_back(json::Array{name, index});
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
                       {"persistent", std::move(persistent)}};
  if (abi.lr)
    abiJson["lr"] = *abi.lr;
  json::Object root{{"format", kArtifactFormat},
                    {"backend", manifest.backend},
                    {"model", manifest.model},
                    {"opt_level", manifest.optLevel},
                    {"dtype", manifest.dtype},
                    {"optimizer", manifest.optimizer},
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
    return read(*f, "name", out.name) && read(*f, "arguments", out.arguments) &&
           read(*f, "results", out.results);
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
  if (!format || *format != kArtifactFormat)
    return err("format is '" + (format ? *format : "?") + "', expected '" +
               kArtifactFormat + "'");
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
  for (size_t i = 0; ok && i < persistent->size(); ++i) {
    const json::Array *pair = (*persistent)[i].getAsArray();
    std::optional<llvm::StringRef> name =
        pair && pair->size() == 2 ? (*pair)[0].getAsString() : std::nullopt;
    std::optional<int64_t> index =
        name ? (*pair)[1].getAsInteger() : std::nullopt;
    if (!index || *index < 0)
      ok = r.fail("'persistent' holds a malformed entry");
    else
      m.abi.persistent.emplace_back(name->str(), unsigned(*index));
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
      llvm::all_of(m.abi.state, inRange) &&
      llvm::all_of(m.abi.params, inRange) &&
      llvm::all_of(m.abi.masters, inRange) &&
      llvm::all_of(m.abi.scaler, inRange) &&
      (!m.abi.lr || inRange(*m.abi.lr)) &&
      llvm::all_of(m.abi.persistent,
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

protected:
  ArtifactFunctionInfo info;
  PackedEntry entry;
};

/// A function whose arguments and results live in host memory (the CPU
/// backend).
class HostArtifactFunction final : public ArtifactFunction {
public:
  using ArtifactFunction::ArtifactFunction;

  llvm::Expected<std::vector<HostTensor>>
  call(llvm::ArrayRef<const HostTensor *> inputs) override {
    return callOnHost(info.name, info.arguments, info.results, inputs,
                      [&](llvm::MutableArrayRef<void *> packed) {
                        entry(packed.data());
                        return llvm::Error::success();
                      });
  }
};

/// The runtime entry points a CUDA artifact exports (its runtime is linked
/// into it), found with dlsym.
struct CudaEntryPoints {
  void *(*streamCreate)();
  void (*streamSynchronize)(void *);
  void *(*memAlloc)(uint64_t, void *, bool);
  void (*memFree)(void *, void *);
  void (*memcpy)(void *, void *, size_t, void *);
  int (*takeError)(char *, size_t);

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
    std::vector<HostTensor> outputs;
    for (const TensorSpec &spec : info.results)
      outputs.emplace_back(spec.kind, spec.shape);
    std::vector<void *> buffers;
    PackedDescriptors packed;
    auto device = [&](size_t bytes, llvm::ArrayRef<int64_t> shape) {
      void *ptr = cuda.memAlloc(std::max<size_t>(bytes, 1), stream, false);
      buffers.push_back(ptr);
      packed.add(ptr, shape);
      return ptr;
    };
    for (const HostTensor *input : inputs)
      if (void *ptr = device(input->getSizeInBytes(), input->getShape()))
        cuda.memcpy(ptr, const_cast<void *>(input->data()),
                    input->getSizeInBytes(), stream);
    for (HostTensor &output : outputs)
      device(output.getSizeInBytes(), output.getShape());
    llvm::Error error = cuda.takeError_();
    if (!error) {
      entry(packed.get().data());
      for (auto [i, output] : llvm::enumerate(outputs))
        cuda.memcpy(output.data(), buffers[inputs.size() + i],
                    output.getSizeInBytes(), stream);
      cuda.streamSynchronize(stream);
      error = cuda.takeError_();
    }
    for (void *ptr : buffers)
      if (ptr)
        cuda.memFree(ptr, stream);
    if (error)
      return llvm::createStringError(
          "@" + info.name + " on the GPU: " + llvm::toString(std::move(error)));
    return outputs;
  }

private:
  CudaEntryPoints cuda;
  void *stream;
};

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
  if (!found)
    return err("a CUDA artifact without the CUDA runtime's entry points");
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

CompiledStep Artifact::getCompiledStep() {
  CompiledStep compiled;
  compiled.step = step.get();
  compiled.logits = logits.get();
  compiled.abi = manifest.abi;
  compiled.inits = manifest.inits;
  return compiled;
}
