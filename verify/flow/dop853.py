r"""A lean float64 DOP853 stepper with SciPy's semantics and preallocated stages.

:class:`DOP853Stepper` takes the steps SciPy's ``scipy.integrate.DOP853`` takes (up to
round-off): Hairer's Dormand–Prince 8(5,3) pair with SciPy's tableau (``A``, ``B``, ``C``,
``E3``, ``E5``, ``D`` and the three extra stages of the 7th-order interpolant, read from
``scipy.integrate.DOP853`` itself), SciPy's initial step rule, error norm and step-size control.
What it leaves out is SciPy's per-step Python and memory work around the field: the stage sums
are formed in place in one ``17 × N`` array (no temporaries, zero tableau entries skipped by the
order of its rows), the error norm in one pass over the stages, the state ``y`` added to each
stage sum as one more row of the same product, and the field is called on the state's own shape
(no ``ravel``/``reshape``/``asarray`` wrappers).

One step from ``(t_k, y_k)`` with ``h = t_{k+1} − t_k`` (``K_0 = f(t_k, y_k)``, kept from the
last step):

.. math:: K_s = f\big(t_k + c_s h,\; y_k + h \textstyle\sum_{r<s} a_{sr} K_r\big),\qquad
          y_{k+1} = y_k + h \textstyle\sum_s b_s K_s,

and with ``e₅ = Σ_s E5_s K_s``, ``e₃ = Σ_s E3_s K_s`` divided entrywise by
``sc = atol + rtol · max(|y_k|, |y_{k+1}|)`` (``N`` entries),

.. math:: \mathrm{err} = \frac{|h|\, \lVert e₅\rVert^2}
          {\sqrt{(\lVert e₅\rVert^2 + 0.01\,\lVert e₃\rVert^2)\, N}}

(SciPy's ``DOP853._estimate_error_norm``). The step is accepted when ``err < 1``; the next
``|h|`` is ``|h| · min(10, 0.9 · err^{-1/8})`` (at most ``|h|`` right after a rejection), a
rejected one is retried with ``|h| · max(0.2, 0.9 · err^{-1/8})``; the run fails when ``|h|``
falls below ten spacings of the floating-point numbers at ``t``. The first ``|h|`` is Hairer's
rule (HNW I, §II.4; SciPy's ``select_initial_step``). ``rtol`` below ``100 ε`` is raised to it,
as SciPy does.

Differences from SciPy, all of round-off size: the stage sums use ``h a_{sr}`` (SciPy multiplies
the sum by ``h``) and add ``y_k`` inside the same product; the squared norms are dot products
(SciPy squares ``numpy.linalg.norm``). Only forward integration (``t_bound > t0``), float64.

Examples
--------
>>> import numpy as np
>>> stepper = DOP853Stepper(lambda t, y: -y, 0.0, np.array([1.0, 2.0]), 1.0, 1e-10, 1e-12)
>>> while stepper.status == "running":
...     _ = stepper.step()
>>> bool(np.allclose(stepper.y, np.exp(-1.0) * np.array([1.0, 2.0]), rtol=1e-9))
True
>>> interpolant = DOP853Stepper(lambda t, y: -y, 0.0, np.array([1.0]), 1.0, 1e-10, 1e-12)
>>> _ = interpolant.step()
>>> t = 0.5 * interpolant.t
>>> bool(abs(interpolant.interpolant()(t)[0] - np.exp(-t)) < 1e-10)
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

__all__ = ["DOP853Stepper"]

SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0  # SciPy's RungeKutta step-size control
ERROR_EXPONENT = -1.0 / 8.0  # -1/(error estimator order 7 + 1)
TOO_SMALL_STEP = "Required step size is less than spacing between numbers."

# Rows of the stage array: the logical stage K_r sits at _ROW[r]; _Y holds y_k. The order puts
# every product's nonzero rows next to each other (K_1 and K_2 are read only by stages 2-4).
_STAGES, _EXTENDED = 12, 16  # stages of a step (K_0..K_11, K_12 = f(t_{k+1}, y_{k+1})); + 3 extra
_ROW = {2: 0, 1: 1, 0: 3, **{r: r + 1 for r in range(3, _EXTENDED)}}
_Y = 2
_ROWS = _EXTENDED + 1


class _Tableau:
    """SciPy's DOP853 tableau laid out on the rows of the stage array: for each product, the
    contiguous rows it reads and its coefficients there (zero where a row it spans is not in
    the sum). Built once, on first use (``scipy.integrate`` costs ~0.4 s to import)."""

    def __init__(self) -> None:
        from scipy.integrate import DOP853 as SciPyDOP853  # start-up: float64 runs only

        A = np.zeros((_EXTENDED, _EXTENDED))  # a_{sr}, stages 0..15 (row 12: no stage sum)
        A[:_STAGES, :_STAGES] = SciPyDOP853.A
        A[_STAGES + 1:] = SciPyDOP853.A_EXTRA
        self.C = [float(c) for c in (*SciPyDOP853.C, 1.0, *SciPyDOP853.C_EXTRA)]
        # stage s: y_k + h Σ_r a_{sr} K_r over the span of the rows of y_k and its K_r
        self.stage = np.zeros((_EXTENDED, _ROWS))  # a_{sr} on the rows (y_k's column: 1)
        self.spans: list[tuple[int, int] | None] = [None] * _EXTENDED
        for s in range(1, _EXTENDED):
            if s == _STAGES:
                continue
            rows = [_Y] + [_ROW[r] for r in range(s) if A[s, r] != 0]
            lo, hi = min(rows), max(rows) + 1
            # every row spanned holds y_k or a stage already computed (zero coefficient)
            assert all(row == _Y or any(_ROW[r] == row for r in range(s))
                       for row in range(lo, hi))
            self.spans[s] = (lo, hi)
            for r in range(s):
                self.stage[s, _ROW[r]] = A[s, r]
        self.B = _on_rows([SciPyDOP853.B])
        self.E = _on_rows([SciPyDOP853.E5, SciPyDOP853.E3])
        self.D = _on_rows(SciPyDOP853.D)
        self.E5, self.E3 = SciPyDOP853.E5, SciPyDOP853.E3


def _on_rows(combinations) -> tuple[slice, np.ndarray]:
    """``(rows, c)``: the contiguous rows that combinations of ``K_0, K_1, …`` (one per row
    of ``combinations``) read, and their coefficients there."""
    used = [_ROW[r] for row in combinations for r, c in enumerate(row) if c != 0]
    lo, hi = min(used), max(used) + 1
    c = np.zeros((len(combinations), hi - lo))
    for i, row in enumerate(combinations):
        for r, value in enumerate(row):
            if value != 0:
                c[i, _ROW[r] - lo] = value
    return slice(lo, hi), c


_TABLEAU: _Tableau | None = None


def _tableau() -> _Tableau:
    global _TABLEAU
    if _TABLEAU is None:
        _TABLEAU = _Tableau()
    return _TABLEAU


class DOP853Stepper:
    r"""Steps of DOP853 (SciPy's semantics, see the module docstring) for ``ẏ = fun(t, y)``.

    Parameters
    ----------
    fun : callable ``(t, y) -> ẏ``
        Called with ``y`` of the shape of ``y0`` (a buffer it must not keep) and returns an
        array of that shape.
    t0, t_bound : float
        The run goes from ``t0`` forward and stops exactly at ``t_bound``.
    y0 : ndarray
        Any shape, float64.
    rtol, atol : float

    Attributes
    ----------
    t, y : float, ndarray
        The last accepted step's end (``y`` a new array every step, never written to later).
    t_old, y_old : float, ndarray
        Its start (``None`` before the first step).
    nfev : int
        Field evaluations, counted as SciPy counts them: the initial one, one for the initial
        step, 12 per attempted step, 3 per :meth:`interpolant`.
    status : str
        ``"running"``, ``"finished"`` (``t = t_bound``) or ``"failed"``.
    """

    E5 = property(lambda self: self._tab.E5)  # SciPy's error weights (dop853_local_error)
    E3 = property(lambda self: self._tab.E3)

    def __init__(self, fun: Callable, t0: float, y0: np.ndarray, t_bound: float, rtol: float,
                 atol: float) -> None:
        if t_bound < t0:
            raise ValueError(f"DOP853Stepper integrates forward: t_bound={t_bound} < t0={t0}.")
        eps = np.finfo(float).eps
        if rtol < 100 * eps:
            warnings.warn("At least one element of `rtol` is too small. Setting `rtol = "
                          f"np.maximum(rtol, {100 * eps})`.", stacklevel=2)
            rtol = max(rtol, 100 * eps)
        if atol < 0:
            raise ValueError("`atol` must be positive.")
        y0 = np.array(y0, dtype=float)
        if not np.all(np.isfinite(y0)):
            raise ValueError("All components of the initial state `y0` must be finite.")
        self._tab = tab = _tableau()
        self.fun, self.shape, self.rtol, self.atol = fun, y0.shape, float(rtol), float(atol)
        self.t, self.y, self.t_bound = float(t0), y0, float(t_bound)
        self.t_old: float | None = None
        self.y_old: np.ndarray | None = None
        self.h_previous: float | None = None
        self.status, self.nfev = "running", 0
        size = y0.size
        self._K = K = np.zeros((_ROWS, size))  # zeros: the rows a span skips are never NaN
        self._K_shaped = K.reshape((_ROWS, *self.shape))
        self._hA = np.empty_like(tab.stage)
        self._stage = np.empty(size)
        self._stage_shaped = self._stage.reshape(self.shape)
        self._increment, self._scale = np.empty(size), np.empty(size)
        self._abs_y, self._abs_new = np.abs(y0.ravel()), np.empty(size)
        self._err = np.empty((2, size))
        # the products' operands, sliced once (views of the preallocated arrays)
        self._terms = [None if span is None else (self._hA[s, span[0]:span[1]],
                                                  K[span[0]:span[1]])
                       for s, span in enumerate(tab.spans)]
        self._B_rows, self._E_rows, self._D_rows = K[tab.B[0]], K[tab.E[0]], K[tab.D[0]]
        K[_Y] = y0.ravel()
        self._K_shaped[_ROW[0]] = self._call(self.t, y0)
        self.h_abs = self._initial_step()

    @property
    def f(self) -> np.ndarray:
        """``fun(t, y)`` (a copy)."""
        row = _ROW[0] if self.t_old is None else _ROW[_STAGES]
        return self._K_shaped[row].copy()

    @property
    def K(self) -> np.ndarray:
        """The last step's stages ``K_0 … K_12`` as rows (a copy; SciPy's ``DOP853.K``)."""
        return self._K[[_ROW[r] for r in range(_STAGES + 1)]]

    def _call(self, t: float, y: np.ndarray) -> np.ndarray:
        self.nfev += 1
        return self.fun(t, y)

    def _initial_step(self) -> float:
        """Hairer's rule for the first ``|h|`` (SciPy's ``select_initial_step``, order 7)."""
        y0, f0 = self.y.ravel(), self._K[_ROW[0]]
        if y0.size == 0:
            return math.inf
        interval = self.t_bound - self.t
        if interval == 0.0:
            return 0.0
        scale = self.atol + np.abs(y0) * self.rtol
        d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = min(h0, interval)
        y1 = y0 + h0 * f0
        f1 = np.asarray(self._call(self.t + h0, y1.reshape(self.shape)), dtype=float).ravel()
        d2 = _rms((f1 - f0) / scale) / h0
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = max(1e-6, h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1 / 8)
        return min(100 * h0, h1, interval)

    def step(self) -> str | None:
        """Take one accepted step (rejected attempts inside); ``None``, or why it failed."""
        if self.status != "running":
            raise RuntimeError("Attempt to step on a failed or finished solver.")
        t, K = self.t, self._K
        if self.y.size == 0 or t == self.t_bound:  # nothing to integrate (SciPy's corner case)
            self.t_old, self.y_old, self.t, self.status = t, self.y, self.t_bound, "finished"
            return None
        if self.t_old is not None:  # y_k and K_0 = f(t_k, y_k) (the last step's K_12)
            np.copyto(K[_Y], self.y.ravel())
            np.copyto(K[_ROW[0]], K[_ROW[_STAGES]])
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        h_abs = max(self.h_abs, min_step)
        rejected = False
        while True:
            if h_abs < min_step:
                self.status = "failed"
                return TOO_SMALL_STEP
            t_new = min(t + h_abs, self.t_bound)
            h = t_new - t
            h_abs = abs(h)
            y_new = self._attempt(t, h)
            error_norm = self._error_norm(h, y_new)
            if error_norm < 1:
                factor = MAX_FACTOR if error_norm == 0 else min(
                    MAX_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                break
            h_abs *= max(MIN_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
            rejected = True
        self.h_previous, self.h_abs = h, h_abs
        self.t_old, self.y_old, self.t, self.y = t, self.y, t_new, y_new
        self._abs_y, self._abs_new = self._abs_new, self._abs_y  # |y_{k+1}|: the next |y_k|
        if t_new >= self.t_bound:
            self.status = "finished"
        return None

    def _attempt(self, t: float, h: float) -> np.ndarray:
        """Stages ``K_1 … K_12`` of a step of size ``h`` into the stage array; ``y_{k+1}``."""
        tab, stage, K_shaped = self._tab, self._stage, self._K_shaped
        np.multiply(tab.stage, h, out=self._hA)
        self._hA[:, _Y] = 1.0
        for s in range(1, _STAGES):
            coefficients, rows = self._terms[s]
            np.dot(coefficients, rows, out=stage)  # y_k + h Σ_r a_{sr} K_r
            K_shaped[_ROW[s]] = self._call(t + tab.C[s] * h, self._stage_shaped)
        increment = np.dot(tab.B[1][0], self._B_rows, out=self._increment)
        increment *= h
        y_new = (self._K[_Y] + increment).reshape(self.shape)
        K_shaped[_ROW[_STAGES]] = self._call(t + h, y_new)
        return y_new

    def _error_norm(self, h: float, y_new: np.ndarray) -> float:
        """SciPy's DOP853 error norm of the attempt (module docstring); leaves ``|y_{k+1}|``
        in ``_abs_new``."""
        abs_new, scale, err = self._abs_new, self._scale, self._err
        np.abs(y_new.ravel(), out=abs_new)
        np.maximum(self._abs_y, abs_new, out=scale)
        scale *= self.rtol
        scale += self.atol
        np.dot(self._tab.E[1], self._E_rows, out=err)
        err /= scale
        err5, err3 = float(np.dot(err[0], err[0])), float(np.dot(err[1], err[1]))
        if err5 == 0 and err3 == 0:
            return 0.0
        return abs(h) * err5 / math.sqrt((err5 + 0.01 * err3) * err.shape[1])

    def _dense_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """``(y_k, F)`` of the interpolant of the last step (three more evaluations: the
        extra stages, in rows of their own), ``F`` its seven coefficient rows."""
        tab, K, h, t_old = self._tab, self._K, self.h_previous, self.t_old
        # the step's rows are intact until the next step: y_k, K_0 … K_12, and hA at h
        for s in range(_STAGES + 1, _EXTENDED):
            coefficients, rows = self._terms[s]
            np.dot(coefficients, rows, out=self._stage)
            self._K_shaped[_ROW[s]] = self._call(t_old + tab.C[s] * h, self._stage_shaped)
        y_old, f_old, f_new = K[_Y].copy(), K[_ROW[0]], K[_ROW[_STAGES]]
        delta = self.y.ravel() - y_old
        F = np.empty((7, y_old.size))
        F[0] = delta
        F[1] = h * f_old - delta
        F[2] = 2 * delta - h * (f_new + f_old)
        np.dot(tab.D[1], self._D_rows, out=F[3:])
        F[3:] *= h
        return y_old, F

    def interpolant(self) -> Callable[[float], np.ndarray]:
        """SciPy's 7th-order interpolant of the last step (three more evaluations):
        ``t ↦ y(t)`` for ``t`` in ``[t_old, t]``, a new array of the state's shape."""
        if self.t_old is None:
            raise RuntimeError("Dense output is available after a successful step was made.")
        if self.t == self.t_old:  # a step of length 0 (see step)
            return lambda t: self.y.copy()
        y_old, F = self._dense_terms()
        h, t_old, shape = self.h_previous, self.t_old, self.shape

        def at(t: float) -> np.ndarray:
            x = (t - t_old) / h
            y = np.zeros_like(y_old)
            for i, f in enumerate(reversed(F)):
                y += f
                y *= x if i % 2 == 0 else 1 - x
            y += y_old
            return y.reshape(shape)

        return at

    def dense_at(self, fractions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""The interpolant ``p`` of the last step and its derivative ``p'`` at
        ``t_k + x h`` for each ``x`` in ``fractions`` (three more evaluations), as arrays of
        shape ``(len(fractions), *shape)``: SciPy's nested form
        ``p = y_k + x(F_0 + (1−x)(F_1 + x(F_2 + …)))`` is ``y_k + Σ_j x^{a_j}(1−x)^{b_j} F_j``
        with ``(a_j, b_j) = (⌊j/2⌋ + 1, ⌊(j+1)/2⌋)``, so both are two small matrix products
        with the rows ``F_j`` (for the defect ``p' − f(t, p)`` of :mod:`verify.flow.defect`).
        Nothing of the steps changes."""
        if self.t_old is None:
            raise RuntimeError("Dense output is available after a successful step was made.")
        x = np.asarray(fractions, dtype=float)[:, None]
        a, b = np.arange(7) // 2 + 1, (np.arange(7) + 1) // 2
        basis = x ** a * (1 - x) ** b
        slope = a * x ** (a - 1) * (1 - x) ** b - b * x ** a * (1 - x) ** np.maximum(b - 1, 0)
        if self.t == self.t_old:  # a step of length 0 (see step)
            f = self._K[_ROW[_STAGES]]
            return (np.repeat(self.y.ravel()[None], len(x), 0).reshape(-1, *self.shape),
                    np.repeat(f[None], len(x), 0).reshape(-1, *self.shape))
        y_old, F = self._dense_terms()
        p = basis @ F
        p += y_old
        dp = slope @ F
        dp /= self.h_previous
        return p.reshape(-1, *self.shape), dp.reshape(-1, *self.shape)


def _rms(x: np.ndarray) -> float:
    """SciPy's RMS norm ``|x|₂ / √N``."""
    return float(np.linalg.norm(x)) / x.size ** 0.5
