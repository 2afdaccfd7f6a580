r"""The naive baseline of :mod:`high_dimension`, written the way the paper's published script works.

The authors' notebook (``cupy-Tform.ipynb`` in github.com/borjanG/2023-transformers) integrates the
rescaled tokens ``z`` with a fixed step ``dt = 0.1``, computes the attention once per step from the
current tokens and keeps it frozen over the step. We do the same with explicit Euler (the brief's
choice; the notebook uses RK4 stages with the frozen attention, which is still first order in the
attention) and, as a naive script would, evaluate ``scipy.linalg.expm(t V)`` at every step:

.. math:: z_i[k+1] = z_i[k] + h \sum_j P_{ij}[k]\, V (z_j[k] - z_i[k]),\qquad
          P_{ij}[k] = \operatorname{softmax}_j \langle e^{t_k V} z_i[k], e^{t_k V} z_j[k]\rangle .

The only concession to float64 is the max-subtraction in the softmax (without it ``exp`` overflows
from ``t ≈ 1`` on in the high-dimensional setup, where the scores reach ``e^{2 λ_1 T} ≈ 1e85``).
This is a benchmark helper, not part of :mod:`verify`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm

__all__ = ["softmax_rows", "euler_frozen_attention"]


def softmax_rows(S: np.ndarray) -> np.ndarray:
    """Row-wise softmax with the row maximum subtracted (no overflow; underflow to 0 is fine)."""
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def euler_frozen_attention(V: np.ndarray, z0: np.ndarray, horizon: float,
                           h: float = 0.1) -> tuple[np.ndarray, int]:
    """Explicit Euler for the rescaled dynamics (3.1) with ``A = Q = K = I``.

    Parameters
    ----------
    V : ndarray, shape (d, d)
    z0 : ndarray, shape (n, d)
        ``z(0) = x(0)``.
    horizon : float
    h : float
        Step (the paper's scripts use 0.1).

    Returns
    -------
    z : ndarray, shape (n, d)
        ``z`` after ``round(horizon / h)`` steps.
    steps : int
    """
    steps = int(round(horizon / h))
    z = np.array(z0, dtype=float)
    for k in range(steps):
        E = expm(k * h * V)                      # e^{tV}, recomputed at every step
        Y = z @ E.T                              # e^{tV} z_i, row by row
        P = softmax_rows(Y @ Y.T)                # attention, frozen over the step
        W = z @ V.T                              # V z_j
        z = z + h * (P @ W - W)                  # Σ_j P_ij V (z_j − z_i)
    return z, steps
