//===- NativeModule.cpp - amp._native: compiled steps for Python ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The one extension python/amp uses (nanobind): it loads an artifact
// amp-compile wrote and runs its step through the same Execution/Training
// code amp-train runs (Artifact, openStepSession, stepResultRoutes,
// readStepScalars). No MLIR: the importer and amp-compile build the step;
// this only runs it. Tensors cross as NumPy arrays of raw elements (bf16 as
// uint16, which python/amp views as torch.bfloat16); their bytes are copied
// into the session's arguments (host memory or the GPU).
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Artifact.h"
#include "amp/Execution/CompiledStep.h"
#include "amp/Training/MpiJob.h"
#include "amp/Training/Trainer.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace nb = nanobind;
using namespace amp;

namespace {

/// An llvm::Error as the Python exception amp raises for a failed step.
[[noreturn]] void raise(llvm::Error error) {
  throw std::runtime_error(llvm::toString(std::move(error)));
}
template <typename T> T take(llvm::Expected<T> value) {
  if (!value)
    raise(value.takeError());
  return std::move(*value);
}

/// The NumPy dtype name holding `kind`'s elements ("uint16" for bf16).
const char *numpyName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "float32";
  case ElementKind::F16:
    return "float16";
  case ElementKind::BF16:
    return "uint16";
  case ElementKind::I32:
    return "int32";
  case ElementKind::I1:
    return "bool";
  }
  return "?";
}

/// What a data-parallel call's error names when it times out.
std::string callDeadline(double timeout) {
  char text[64];
  std::snprintf(text, sizeof(text), "a call of the step (dp_timeout=%g)",
                timeout);
  return text;
}

/// The process's data-parallel job (amp.compile(data_parallel=True)):
/// joined once through the MPI plugin and kept until the process ends (MPI
/// is finalized at exit).
Communicator *job = nullptr;

/// A loaded artifact and one session of its step: the arguments live in the
/// session between calls.
class NativeStep {
public:
  explicit NativeStep(const std::string &path) {
    artifact = take(Artifact::load(path));
    compiled = artifact->getCompiledStep();
    // Every argument starts from its initializer (zeros for the optimizer
    // state); python/amp then sets the model's values.
    std::vector<HostTensor> args = take(initialArguments(compiled, 0));
    session = take(openStepSession(compiled, std::move(args)));
    routes = stepResultRoutes(compiled);
  }

  ~NativeStep() {
    if (joined)
      compiled.setCommunicator(nullptr);
  }
  const ArtifactManifest &manifest() const { return artifact->getManifest(); }
  /// The data-parallel ranks the step is compiled for.
  int64_t ranks() const { return compiled.ranks; }
  /// A data-parallel step's collectives give up (and end the job, naming
  /// the ranks they wait for) when a call has not completed within
  /// `seconds` (0: never).
  void setTimeout(double seconds) {
    if (!(seconds >= 0))
      throw std::invalid_argument("the timeout must be 0 (none) or a number "
                                  "of seconds");
    timeout = seconds;
  }
  /// A data-parallel step: installs the job's communicator in the
  /// artifact's runtime.
  void joinJob() {
    if (compiled.ranks == 1)
      return;
    llvm::Error e = [&] {
      ScopedDeadline starting(job, timeout, "starting NCCL");
      return installCommunicator(compiled, job);
    }();
    if (e)
      raise(std::move(e));
    joined = true;
  }
  /// A data-parallel step: copies rank 0's value of every persistent
  /// argument (parameters, optimizer and scaler state) to this rank, as
  /// DistributedDataParallel does at construction.
  void broadcastState() {
    if (!joined)
      return;
    ScopedDeadline deadline(job, timeout, "broadcasting rank 0's state");
    if (llvm::Error e = broadcastPersistent(*session, abi(), *job)) {
      // The ranks are out of step (a broadcast may still be under way):
      // end the job rather than raise.
      std::fprintf(stderr, "amp: rank %d of %d: %s; ending the job\n",
                   job->rank(), job->size(),
                   llvm::toString(std::move(e)).c_str());
      job->abort(1);
    }
  }
  /// (shape, element name) of each step argument.
  std::vector<std::tuple<std::vector<int64_t>, std::string>> arguments() const {
    std::vector<std::tuple<std::vector<int64_t>, std::string>> out;
    for (const TensorSpec &spec : manifest().step.arguments)
      out.emplace_back(std::vector<int64_t>(spec.shape.begin(), spec.shape.end()),
                       elementName(spec.kind).str());
    return out;
  }

  /// Copies `array` (C-contiguous, the argument's element size and count)
  /// into argument `i`.
  void set(unsigned i, nb::ndarray<nb::c_contig, nb::device::cpu> array) {
    const auto &specs = manifest().step.arguments;
    if (i >= specs.size())
      throw std::out_of_range("argument " + std::to_string(i) +
                              " out of range");
    HostTensor value(specs[i].kind, specs[i].shape);
    size_t bytes = array.nbytes();
    if (bytes != value.getSizeInBytes() ||
        array.itemsize() != elementBytes(specs[i].kind))
      throw std::invalid_argument(
          "argument " + std::to_string(i) + " is " + specs[i].str() + " (" +
          std::to_string(value.getSizeInBytes()) + " bytes), given " +
          std::to_string(bytes) + " bytes of " +
          std::to_string(array.itemsize()) + "-byte elements");
    std::memcpy(value.data(), array.data(), bytes);
    if (llvm::Error e = session->take(i, std::move(value)))
      raise(std::move(e));
  }

  /// Makes the memory at `address` argument `i`'s home from now on
  /// (StepSession::adopt): the caller keeps it alive while this step lives.
  /// The argument's value is copied there first. False where the session
  /// keeps its arguments elsewhere (the GPU) or the memory is not 64-byte
  /// aligned: nothing changes then.
  bool adopt(unsigned i, uintptr_t address) {
    if (i >= manifest().step.arguments.size())
      throw std::out_of_range("argument " + std::to_string(i) +
                              " out of range");
    return take(session->adopt(i, reinterpret_cast<void *>(address)));
  }

  /// Argument `i` as a new NumPy array.
  nb::object get(unsigned i) {
    HostTensor value = take(session->get(i));
    return toNumpy(value);
  }

  /// One step: (loss, scale, skipped, collapsed, nonfinite).
  std::tuple<double, double, bool, bool, int64_t> step() {
    ScopedDeadline deadline(joined ? job : nullptr, timeout,
                            callDeadline(timeout));
    std::vector<HostTensor> toHost = take(session->step(routes));
    StepScalars s = readStepScalars(compiled.abi, toHost);
    lastMagnitudes = std::move(s.magnitudes);
    return {s.loss, s.scale, s.skipped, s.collapsed, s.nonfinite};
  }

  /// One step on `inputs` (argument index, address, element bytes): the
  /// caller's memory, C-contiguous, of the argument's element count and
  /// alive for the call (python/amp checks this before it passes an
  /// address). The step reads it in place where the backend allows (host
  /// code, 64-byte aligned: PyTorch's CPU allocations are), else copies it;
  /// 8-byte integers for an i32 argument (PyTorch's int64 labels) are
  /// narrowed into a copy. Returns (loss, scale, skipped, collapsed,
  /// nonfinite).
  std::tuple<double, double, bool, bool, int64_t> stepWith(
      const std::vector<std::tuple<unsigned, uintptr_t, unsigned>> &inputs) {
    const auto &specs = manifest().step.arguments;
    std::vector<std::pair<unsigned, HostTensor>> values;
    for (auto [i, address, bytes] : inputs) {
      if (i >= specs.size())
        throw std::out_of_range("argument " + std::to_string(i) +
                                " out of range");
      const TensorSpec &spec = specs[i];
      void *data = reinterpret_cast<void *>(address);
      int64_t count = numElements(spec.shape);
      if (spec.kind == ElementKind::I32 && bytes == 8) {
        const auto *wide = static_cast<const int64_t *>(data);
        values.emplace_back(
            i, HostTensor::fromInts(spec.shape, std::vector<int32_t>(
                                                    wide, wide + count)));
        continue;
      }
      if (bytes != elementBytes(spec.kind))
        throw std::invalid_argument("argument " + std::to_string(i) + " is " +
                                    spec.str() + ", given " +
                                    std::to_string(bytes) + "-byte elements");
      if (address % 64 == 0) {
        values.emplace_back(i, HostTensor::borrow(spec.kind, spec.shape, data));
        continue;
      }
      HostTensor copy(spec.kind, spec.shape);
      std::memcpy(copy.data(), data, copy.getSizeInBytes());
      values.emplace_back(i, std::move(copy));
    }
    ScopedDeadline deadline(joined ? job : nullptr, timeout,
                            callDeadline(timeout));
    std::vector<HostTensor> toHost = take(session->stepWith(routes, values));
    StepScalars s = readStepScalars(compiled.abi, toHost);
    lastMagnitudes = std::move(s.magnitudes);
    return {s.loss, s.scale, s.skipped, s.collapsed, s.nonfinite};
  }

  /// With check-numerics, where the last step's first inf or NaN was born
  /// (amp::findNumericsOrigin) as a dict, or None.
  nb::object numericsReport(int64_t step) const {
    if (abi().numerics.empty())
      return nb::none();
    std::optional<NumericsReport> report =
        findNumericsOrigin(abi(), lastMagnitudes);
    if (!report)
      return nb::none();
    report->step = step;
    nb::dict d;
    d["argument"] = !report->name.empty() ? nb::cast(report->name) : nb::none();
    d["op"] = report->op;
    d["stage"] = report->argument   ? "argument"
                 : report->backward ? "backward"
                                    : "forward";
    d["module"] = report->module;
    d["file"] = report->file;
    d["line"] = report->line;
    d["result"] = report->result;
    d["value"] = report->nan ? "NaN" : "inf";
    d["input_magnitude"] = report->inputMagnitude;
    d["calibrated"] = report->calibrated;
    d["describe"] = report->describe();
    return d;
  }

  /// With check-numerics, the step's site table (amp-check-numerics'
  /// train.numerics): one dict per entry, in program order.
  nb::list numericsSites() const {
    nb::list sites;
    for (const NumericsSite &site : abi().numerics) {
      nb::dict d;
      d["kind"] = site.kind == NumericsSite::Kind::Argument   ? "argument"
                  : site.kind == NumericsSite::Kind::Constant ? "constant"
                                                              : "op";
      d["argument"] = site.argument;
      d["magnitude"] = site.magnitude;
      d["op"] = site.op;
      d["module"] = site.module;
      d["file"] = site.file;
      d["line"] = site.line;
      d["stage"] = site.backward ? "backward" : "forward";
      d["result"] = site.result;
      d["inputs"] = site.inputs;
      d["check"] = site.check;
      sites.append(d);
    }
    return sites;
  }

  /// The last step's check-numerics vector (each entry's largest
  /// magnitude, inf and NaN kept); empty without it.
  std::vector<double> numericsMagnitudes() const { return lastMagnitudes; }

  /// Whether the step was compiled with check-numerics.
  bool checksNumerics() const { return !abi().numerics.empty(); }

  /// A step's `nonfinite` for people: (forward, what, name), or None.
  nb::object describeNonfinite(int64_t nonfinite) const {
    std::optional<NonfiniteSource> source =
        amp::describeNonfinite(abi(), manifest().step.arguments, nonfinite);
    if (!source)
      return nb::none();
    return nb::make_tuple(source->forward, source->what, source->name);
  }

  /// The logits function's results on the current arguments.
  std::vector<nb::object> logits() {
    std::vector<nb::object> out;
    for (HostTensor &value : take(session->logits()))
      out.push_back(toNumpy(value));
    return out;
  }

  const StepAbi &abi() const { return compiled.abi; }

private:
  static nb::object toNumpy(const HostTensor &value) {
    nb::module_ numpy = nb::module_::import_("numpy");
    std::vector<int64_t> shape(value.getShape().begin(),
                               value.getShape().end());
    nb::object array =
        numpy.attr("empty")(nb::cast(shape), numpyName(value.getKind()));
    nb::object buffer = array.attr("ctypes").attr("data");
    std::memcpy(reinterpret_cast<void *>(nb::cast<uintptr_t>(buffer)),
                value.data(), value.getSizeInBytes());
    return array;
  }

  std::unique_ptr<Artifact> artifact;
  bool joined = false;
  double timeout = 0;

  CompiledStep compiled;
  std::unique_ptr<StepSession> session;
  std::vector<ResultRoute> routes;
  /// The last step's check-numerics magnitudes (empty without it).
  std::vector<double> lastMagnitudes;
};

/// Argument indices of the step's ABI as a Python list.
std::vector<unsigned> indices(llvm::ArrayRef<unsigned> list) {
  return std::vector<unsigned>(list.begin(), list.end());
}

} // namespace

NB_MODULE(_native, m) {
  m.doc() = "amp's compiled training steps (python/amp uses this module)";
  // CPU steps run on OpenMP's pool, which the artifacts' runtimes share with
  // this module (one libgomp per process); their BLAS follows its count.
  m.def(
      "set_num_threads", [](int threads) { omp_set_num_threads(threads); },
      nb::arg("threads"), "The threads of compiled CPU steps from now on.");
  m.def(
      "get_num_threads", []() { return omp_get_max_threads(); },
      "The threads compiled CPU steps run on.");
  m.def(
      "release_freed_memory", []() { releaseFreedMemory(); },
      "Returns the C heap's free memory to the kernel (after a step's "
      "set-up).");
  m.def(
      "join_mpi_job",
      []() {
        if (!job) {
          std::string error;
          job = joinMpiJob(error).release();
          if (!job)
            throw std::runtime_error("cannot join the MPI job: " + error);
        }
        return std::make_tuple(job->rank(), job->size());
      },
      "Joins the mpirun job this process belongs to (once): (rank, size).");
  m.def(
      "job",
      []() -> nb::object {
        if (!job)
          return nb::none();
        return nb::make_tuple(job->rank(), job->size());
      },
      "(rank, size) of the joined mpirun job, or None.");
  m.def(
      "abort_job",
      [](int code) {
        if (job)
          job->abort(code);
      },
      nb::arg("code"),
      "Ends every rank of the joined job (MPI_Abort); nothing without one.");
  nb::class_<NativeStep>(m, "NativeStep")
      .def(nb::init<const std::string &>(), nb::arg("artifact"),
           "Loads an artifact of amp-compile and opens a session of its step.")
      .def_prop_ro("arguments", &NativeStep::arguments,
                   "(shape, element type) of each argument of the step.")
      .def_prop_ro("backend",
                   [](const NativeStep &s) { return s.manifest().backend; })
      .def_prop_ro(
          "memory_plan_json",
          [](const NativeStep &s) -> nb::object {
            const MemoryPlan &plan = s.manifest().step.memoryPlan;
            if (plan.empty())
              return nb::none();
            return nb::str(serializeMemoryPlan(plan).c_str());
          },
          "The step's memory plan (amp-plan-memory, from the artifact's "
          "manifest) as the manifest's JSON, or None where the step has "
          "none.")
      .def_prop_ro("params",
                   [](const NativeStep &s) { return indices(s.abi().params); })
      .def_prop_ro("masters",
                   [](const NativeStep &s) { return indices(s.abi().masters); })
      .def_prop_ro("state",
                   [](const NativeStep &s) { return indices(s.abi().state); })
      .def_prop_ro("persistent",
                   [](const NativeStep &s) {
                     std::vector<std::tuple<std::string, unsigned>> out;
                     for (auto &[name, i] : s.abi().persistent)
                       out.emplace_back(name, i);
                     return out;
                   })
      .def_prop_ro("lr",
                   [](const NativeStep &s) {
                     return s.abi().lr ? int(*s.abi().lr) : -1;
                   })
      .def_prop_ro("scaler",
                   [](const NativeStep &s) { return indices(s.abi().scaler); })
      .def("set", &NativeStep::set, nb::arg("index"), nb::arg("array"),
           "Copies a C-contiguous array into argument `index`.")
      .def("adopt", &NativeStep::adopt, nb::arg("index"), nb::arg("address"),
           "Makes the host memory at `address` (the argument's elements, "
           "64-byte aligned, kept alive by the caller) argument `index`'s "
           "home: the step reads and updates it in place. False where the "
           "session cannot (the GPU, unaligned memory).")
      .def("get", &NativeStep::get, nb::arg("index"),
           "Argument `index` as a new NumPy array (bf16 as uint16).")
      .def("step", &NativeStep::step,
           "Runs one step: (loss, scale, skipped, collapsed, nonfinite).")
      .def("numerics_report", &NativeStep::numericsReport, nb::arg("step"),
           "With check-numerics, where the last step's first inf or NaN "
           "was born (a dict), or None.")
      .def("numerics_sites", &NativeStep::numericsSites,
           "With check-numerics, the site table: one dict per entry.")
      .def("numerics_magnitudes", &NativeStep::numericsMagnitudes,
           "The last step's check-numerics vector.")
      .def_prop_ro("checks_numerics", &NativeStep::checksNumerics,
                   "Whether the step was compiled with check-numerics.")
      .def("describe_nonfinite", &NativeStep::describeNonfinite,
           nb::arg("nonfinite"),
           "A step's nonfinite index as (forward, what, name), or None.")
      .def("step_with", &NativeStep::stepWith, nb::arg("inputs"),
           "Runs one step on [(argument index, address, element bytes)] of "
           "memory the caller keeps alive, read in place where the backend "
           "allows: (loss, scale, skipped, collapsed, nonfinite).")
      .def_prop_ro("ranks", &NativeStep::ranks,
                   "The data-parallel ranks the step is compiled for.")
      .def("set_timeout", &NativeStep::setTimeout, nb::arg("seconds"),
           "A data-parallel call's deadline in seconds (0: none).")
      .def("join_job", &NativeStep::joinJob,
           "Installs the joined job's communicator in the step's runtime.")
      .def("broadcast_state", &NativeStep::broadcastState,
           "Copies rank 0's parameters and state to every rank (a "
           "data-parallel step).")
      .def("logits", &NativeStep::logits,
           "The forward's outputs on the current arguments.");
}
