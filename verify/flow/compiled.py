r"""An optional compiled (Numba) float64 kernel for the softmax of the eigen-coordinate field.

:class:`~verify.flow.fields.EigenRescaledField` evaluates ``ẇ = (P w − w) Λ`` with
``P_ij = w_ij / Σ_l w_il`` and ``w_ij = exp(−e^{L} (m_i − S̃_ij))``, ``m_i = max_l S̃_il``. Its two
``n×n×d`` products (``S̃ = Y B Yᵀ`` and ``W w``) are BLAS calls, the floor of any route; the NumPy
path adds about ten passes over the ``n×n`` scores (row maxima, gap, scale, floor, ``exp``, zeros,
sums, division), ~40 % of an evaluation at ``n = d = 128``. This kernel fuses them into two loops
compiled by Numba, around NumPy's own vectorised ``exp`` (Numba's is scalar libm: measured 8×
slower at ``n = 128``) and the BLAS products:

1. :func:`exponents` — per row, ``m_i`` and the exponents ``−e^{L}(m_i − S̃_ij)`` (``−exp(L + log
   gap)`` where ``e^{L}`` would overflow), clamped at ``−600`` so that ``exp`` stays on its fast
   path;
2. NumPy's ``exp`` in place;
3. :func:`row_sums` — weights at the clamp (``≤ e^{−600}``, invisible next to the row's largest
   weight 1) set to 0, and the row sums;
4. ``W w`` (BLAS), then :func:`finish` — ``(W w)_i / Σ_l W_il − w_i``, times ``Λ``: the division
   on the ``n×d`` product instead of the ``n×n`` weights.

The same arithmetic as the NumPy path except the order of the row sums and where the division
falls: the two agree within a few ulps of the field's size (``tests/test_dynamics.py``), never
bit for bit.

**When it is used** (:func:`kernel`): Numba installed (the ``compiled`` extra) and ``n²d`` at
least :data:`MIN_SIZE`. Importing Numba and loading the compiled kernel cost ~0.6 CPU s per
process (``cache=True``: compiled once per machine, ~2 s, then read from Numba's cache), against
~35–55 µs saved per evaluation at ``n = d = 128`` (215–221 µs instead of 250–275, measured on
a 2-core Xeon): it pays from ~1.5·10⁴ evaluations of that size in one process (the paper's
128×128 run with its error estimate makes ~1.8·10⁴), never on the small systems of the claim
suite, which therefore never import Numba. ``VERIFY_COMPILED=0`` turns it off.

Examples
--------
>>> kernel(n=4, d=2) is None                       # far below MIN_SIZE: the NumPy path
True
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

__all__ = ["MIN_SIZE", "kernel", "available"]

#: ``n²d`` from which the compiled kernel is used (``n = d = 128`` is ``2.1·10⁶``; ``n = d = 64``,
#: ``2.6·10⁵``, saves ~15 µs per evaluation: not worth the ~0.5 s of loading per process).
MIN_SIZE = 1_000_000


def available() -> bool:
    """Is Numba installed (and not turned off by ``VERIFY_COMPILED=0``)?"""
    if os.environ.get("VERIFY_COMPILED", "1") == "0":
        return False
    try:
        import numba  # noqa: F401  (optional extra: imported only where the kernel may pay)
    except ImportError:
        return False
    return True


def kernel(n: int, d: int):
    """The compiled functions ``(exponents, row_sums, finish)`` for an ``n×d`` state, or
    ``None`` (the NumPy path) when ``n²d < MIN_SIZE`` or Numba is not available."""
    if n * n * d < MIN_SIZE or not available():
        return None
    return _compiled()


@functools.cache
def _compiled():
    import numba  # optional extra (`pip install .[compiled]`), imported on first use only

    options = {"cache": True, "nogil": True, "error_model": "numpy"}

    @numba.njit(**options)
    def exponents(S, log_scale, floor):
        """Over ``S`` (``-inf`` where masked): ``max(−e^L (m_i − S̃_ij), floor)`` per row."""
        n, m = S.shape
        small = log_scale < 700.0
        scale = math.exp(log_scale) if small else 0.0
        for i in range(n):
            top = -np.inf
            for j in range(m):
                if S[i, j] > top:
                    top = S[i, j]
            for j in range(m):
                gap = top - S[i, j]
                if small:
                    e = gap * -scale
                elif gap > 0.0:
                    e = -math.exp(log_scale + math.log(gap))
                else:
                    e = -0.0
                S[i, j] = floor if e <= floor else e  # NaN stays NaN

    @numba.njit(**options)
    def row_sums(W, tiny, sums):
        """Weights ``≤ tiny`` set to 0; ``sums[i] = Σ_j W_ij``."""
        n, m = W.shape
        for i in range(n):
            total = 0.0
            for j in range(m):
                v = W[i, j]
                if v <= tiny:
                    W[i, j] = 0.0
                else:
                    total += v
            sums[i] = total

    @numba.njit(**options)
    def finish(out, sums, w, lam):
        """``out_i ← (out_i / sums_i − w_i) ∘ λ``."""
        n, d = out.shape
        for i in range(n):
            r = sums[i]
            for k in range(d):
                out[i, k] = (out[i, k] / r - w[i, k]) * lam[k]

    return exponents, row_sums, finish
