"""Print the shell assignments of the CPU kernel set this machine does not pick (for .ci/run).

OpenBLAS: an AVX-512 kernel (SkylakeX, Cooperlake, SapphireRapids) → ``Haswell`` (AVX2, what an
AMD EPYC gets); anything else → ``Sandybridge`` (AVX without FMA: other round-off again).
NumPy: its dispatched SIMD loops above the build's baseline that this CPU runs are disabled
(``NPY_DISABLE_CPU_FEATURES``): the AVX-512 ones on an AVX-512 machine, else the AVX2 ones.
"""

import shlex

from threadpoolctl import threadpool_info

try:  # NumPy 2
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # NumPy 1.26
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

kernel = next((i.get("architecture") or "" for i in threadpool_info()
               if i.get("internal_api") == "openblas"), "")
avx512 = any(name in kernel.lower() for name in ("skylakex", "cooperlake", "sapphirerapids"))
other = "Haswell" if avx512 else "Sandybridge"
marks = ("AVX512", "X86_V4") if avx512 else ("AVX2", "X86_V3", "AVX512", "X86_V4")
disabled = [f for f in __cpu_dispatch__ if __cpu_features__.get(f) and f.startswith(marks)]
print(f"export OPENBLAS_CORETYPE={other} "
      f"NPY_DISABLE_CPU_FEATURES={shlex.quote(' '.join(disabled))}")
