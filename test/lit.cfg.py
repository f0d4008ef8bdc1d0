# -*- Python -*-
# lit configuration of amp's regression tests (see mlir/examples/standalone).

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "AMP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.amp_obj_root, "test")

# Inputs that are not tests themselves.
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "Unit", "Integration"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%amp_src", config.amp_src_root))
config.substitutions.append(("%amp_bin", os.path.join(config.amp_obj_root, "bin")))
config.substitutions.append(("%examples", os.path.join(config.amp_src_root, "examples")))
config.substitutions.append(("%llvm_lib_dir", config.llvm_lib_dir))
# TableGen with MLIR's .td files (cmake/gen_pipeline_options.py's input).
config.substitutions.append(("%llvm_tblgen", os.path.join(config.llvm_tools_dir, "llvm-tblgen")
                             + " -I " + os.path.join(os.path.dirname(config.llvm_tools_dir), "include")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# The tests' compile cache is the build's own (a clean build starts empty;
# the user's ~/.cache/amp is never touched); tests of the cache itself set
# their own AMP_CACHE_DIR.
config.environment["AMP_CACHE_DIR"] = os.path.join(config.amp_obj_root, "amp-cache")

# The tools verify the IR after every pass in the tests (release tools verify
# once: amp::shouldVerifyEachPass), so that a pass that breaks it is named.
config.environment["AMP_VERIFY_EACH"] = "1"

# FileCheck's --enable-var-scope everywhere (DESIGN.md conventions).
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

config.amp_tools_dir = os.path.join(config.amp_obj_root, "bin")
tool_dirs = [config.amp_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["amp-opt", "amp-run", "amp-compile", "amp-train"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.amp_tools_dir, append_path=True)

if config.amp_enable_cuda:
    config.available_features.add("cuda")
    # A GPU and its driver: the tests that run compiled steps on the device.
    import shutil
    import subprocess
    smi = shutil.which("nvidia-smi")
    if smi and subprocess.run([smi, "-L"], capture_output=True).returncode == 0:
        config.available_features.add("cuda-gpu")
    config.substitutions.append(("%ptxas", os.path.join(config.cuda_bin_dir, "ptxas")))
    # The stand-in libcuda of the runtime's unit tests (host memory; kernels
    # are recorded, not run).
    config.substitutions.append(("%fake_cuda_driver", os.path.join(
        config.amp_obj_root, "test", "Unit", "libAMPFakeCudaDriver" + config.llvm_shlib_ext)))
    # ... and its stand-in libnccl (every rank's peers hold its values).
    config.substitutions.append(("%fake_nccl", os.path.join(
        config.amp_obj_root, "test", "Unit", "libAMPFakeNccl" + config.llvm_shlib_ext)))
