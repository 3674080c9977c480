# lit configuration for OTC's compiler tests.
import os

import lit.formats

config.name = "OTC"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = config.otc_test_src
config.test_exec_root = os.path.join(config.otc_obj_root, "test", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.otc_tools_dir, config.llvm_tools_dir, os.environ.get("PATH", "")])
# Every program otc-compile builds here has its memory plan checked.
config.environment["OTC_VERIFY_PLAN"] = "1"
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.otc_test_src, "Inputs")))
