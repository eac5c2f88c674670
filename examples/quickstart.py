"""The README's Python example, run as written from the repository's root
(test/py/test_examples.py runs it): load IR, run the passes, read the
remarks and statistics, JIT-compile and call a kernel."""

import numpy as np
import llvmaccel

module = llvmaccel.load_module("examples/axpy.ll")  # or parse_ir(text_or_bitcode)
report = llvmaccel.run_passes(module, "default<O3>", target="host")
for remark in report.remarks:                         # pass, kind, function, message, location
    print(remark.pass_name, remark.kind, remark.function, remark.message)
print(report.statistics)                              # {"accel-prefetch.NumIndirectPrefetches": 8, ...}

x = np.arange(1024, dtype=np.float32)
y = np.ones_like(x)
compiled = llvmaccel.jit.compile(module, "default<O3>")   # a private copy, for this CPU
compiled["axpy"](y, x, 2.0, len(x))                   # numpy arrays / CPU torch tensors by pointer

assert np.array_equal(y, 2.0 * x + 1.0)
assert "accel-prefetch" in report.fired()
