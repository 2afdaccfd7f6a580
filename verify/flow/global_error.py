r"""A global error estimate of a float64 run by the linearised error equation (a prototype).

The global error ``e(t) = y_run(t) − y(t)`` of a one-step run ``y_{k+1} = Ψ_{h_k}(y_k)`` obeys,
to first order in its size (Shampine; Lang & Verwer, *On global error estimation and control
for initial value problems*, SIAM J. Sci. Comput. 29, 2007),

.. math:: e_{k+1} = Φ(t_{k+1}, t_k)\, e_k + δ_k, \qquad
          \partial_t Φ(t, t_k) = J(t, y(t))\, Φ(t, t_k),\quad Φ(t_k, t_k) = I,

with ``δ_k`` the local error of step ``k`` and ``J = ∂f/∂y`` along the run. This module
propagates ``e`` on the run's own accepted steps, *alongside* the run (an observer of
:class:`~verify.flow.solvers.DOP853`): ``Φ(t_{k+1}, t_k) e_k`` is one explicit Runge–Kutta step
of ``ė = J(t, y_run(t)) e`` (Heun's method with ``J`` at the two accepted states, or the
classical RK4 with the midpoint state from the cubic Hermite interpolant of the step), ``J·v`` a
directional derivative, never a matrix. ``δ_k`` is either the solver's embedded estimate of the
step (DOP853's, the one its step control uses) or, with :class:`StepDoubling`, the step's local
error to leading order by two half steps from the run's own state.

For the rescaled field (3.1) in eigen-coordinates (:class:`~verify.flow.fields.EigenRescaledField`:
``ẇ = (A w − w) Λ``, ``A = softmax(e^{L} S̃)`` row-wise, ``S̃ = Y B_P Yᵀ``, ``Y = w ∘ s``,
``s_k = e^{(λ_k − μ)t}``, ``L = 2μt``) the product is

.. math:: J v = (\dot A\, w + A v − v)\,Λ,\qquad
          \dot A = A ∘ \big(G − (A ∘ G)\mathbf 1\,\mathbf 1ᵀ\big),\quad
          G = e^{L}\big(\dot Y B_P Yᵀ + Y B_P \dot Yᵀ\big),\quad \dot Y = v ∘ s,

four ``n×n×d`` products (three when ``B_P = I``) once ``A`` is known at the point
(:class:`EigenLinearisation`).

It is an **estimate** (the propagation drops ``O(|e|²)``, step doubling ``O(h^{10})``), and
nothing in the library decides on it yet. Its coverage, measured by
``benchmarks/global_error.py`` against runs at ``rtol = 3e-14`` and at 32 digits (session 8):

* with DOP853's embedded ``δ_k`` (of order 6–8 in ``h`` for a local error of order 9, not of
  its sign): ×6–×137 above the true error on the 128×128 run before its hardmax switch, and on
  131 small systems true/estimate median 0.019 but **max 11.4** — it under-covers (the signed
  local estimates cancel where the true ones do not): not an estimate to rely on;
* with :class:`StepDoubling`: true/estimate 0.997–1.02 on the 128×128 run (``t > 0.1``; before,
  the truth's own error dominates), and on the 131 small systems median 1.00, max 1.01;
  but it costs about what the reference run costs (23 evaluations per step: ×1.87–2.00 the
  run's CPU with the propagation, the reference run ×1.98–2.10), and doubling only the steps a
  DOP853-based screen picks under-covers (DOP853's estimate is ×87–×264 *below* the true local
  error on the crossing steps at ``t ≈ 0.824``);
* with :class:`ScreenedDoubling` (session 11: step doubling where the run's own weights say the
  attention turns within the step, DOP853's ``δ_k`` elsewhere): on the 128×128 run some row
  turns on almost every step (a leading gap moving by its size on 47 % of the 422 steps, by 10×
  its size on 11 %), so a screen that catches the bad steps doubles most of them (×1.05 the
  run at 30 %); and the screen misses where it matters (small draw #508: the step at
  ``t = 3.67`` whose true local error is ×53 DOP853's has a gap moving by 2.8× its size).
  DOP853's ``δ_k`` added without cancellation (``added="entrywise"``) covers on the runs
  measured without any doubling, but only by ×1.65 on #508: see ``benchmarks/README.md``;
* with the defect of DOP853's dense output (:mod:`verify.flow.defect`, session 12: 8
  evaluations and 3 products a step instead of doubling's 23 evaluations): as tight as step
  doubling on the 131 small systems (max 1.08) and the 128×128 run (max 1.19), #508's step and
  the 128×128 run's crossing steps read within ×1.02, but ×0.8–0.9 the run's CPU: still too
  dear for the must-show (``benchmarks/global_error.py --defect``, ``anchors.py hd-defect``).

Examples
--------
>>> import numpy as np
>>> from verify.flow.solvers import DOP853, StepController
>>> from verify.flow.fields import EigenRescaledField
>>> from verify.model import Model
>>> field = EigenRescaledField(Model(V=[[1, 0], [0, -1]]), 3)
>>> w0 = np.array([[0.3, 0.1], [-0.2, 0.4], [0.5, -0.3]])
>>> estimate = LinearisedGlobalError(EigenLinearisation(field))
>>> segment = DOP853(observer=estimate).segment(
...     field, None, [0.0, 1.0], 1, 0.0, w0, StepController(1e-8, 1e-10))
>>> len(estimate.times) == segment.steps, bool(0 < estimate.norms[-1] < 1e-6)
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.integrate import DOP853 as SciPyDOP853

from verify.errors import InvalidArgument

__all__ = ["EigenLinearisation", "LinearisedGlobalError", "ScreenedDoubling", "StepDoubling",
           "attention_change", "dop853_step"]

_NEGLIGIBLE_WEIGHT = 1e-20  # attention weights set to 0 in the float32 products
_FLOAT32_LOG_SCALE = 60.0  # beyond it e^L G may overflow float32 (max ~e^88): float64 there
_CACHED = 3  # points whose products' parts EigenLinearisation keeps: a step's start, middle, end


class EigenLinearisation:
    r"""``v ↦ J(t, w) v`` of an :class:`~verify.flow.fields.EigenRescaledField` with softmax
    attention, the weights ``A(t, w)`` kept between products at the same point.

    Parameters
    ----------
    field : EigenRescaledField
        ``field.model.softmax`` must hold (hardmax weights have no derivative).
    dtype : numpy dtype
        Of the products (``A`` itself is computed in float64): ``float32`` leaves ~7 digits in
        ``J v``, which an error *estimate* does not need more of (measured on the 128×128 run:
        the estimate's CPU 0.74 s instead of 0.99, the same values to 3 digits). Points with
        ``e^L`` beyond float32's range (``L > 60``) are done in float64.

    Examples
    --------
    >>> import numpy as np
    >>> from verify.flow.fields import EigenRescaledField
    >>> from verify.model import Model
    >>> field = EigenRescaledField(Model(V=[[2, 1], [1, 2]]), 3)
    >>> w, v = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]]), np.full((3, 2), 0.1)
    >>> eps = 1e-6
    >>> fd = (field(0.3, w + eps * v) - field(0.3, w - eps * v)) / (2 * eps)
    >>> bool(np.allclose(EigenLinearisation(field).apply(0.3, w, v), fd, atol=1e-8))
    True
    """

    def __init__(self, field, dtype: type = np.float64) -> None:
        if not field.model.softmax:
            raise InvalidArgument("EigenLinearisation needs softmax attention (hardmax "
                                  "weights have no derivative).")
        self.field, self.dtype = field, np.dtype(dtype)
        self._cache: list[tuple[float, np.ndarray, tuple]] = []  # the last _CACHED points

    def _at(self, t: float, w: np.ndarray) -> tuple:
        """``(s, Y, Y B_Pᵀ, Y B_P, A, w, e^L)`` at ``(t, w)`` (in ``dtype``), from one of the
        last three calls if it was the same point (a step's start, midpoint and end)."""
        for point, state, parts in self._cache:
            if point == t and np.array_equal(state, w):
                return parts
        field = self.field
        L = 2.0 * field.mu * t
        if L > 700.0:
            raise InvalidArgument(f"e^L = e^{L:.0f} overflows float64: the linearisation is "
                                  "for the softmax regime before a hardmax switch.")
        s = np.exp((field.lam - field.mu) * t)
        Y = w * s
        YB, YBt = (Y, Y) if field.B is None else (Y @ field.B, Y @ field.B.T)
        A = field.attention(t, w)
        dtype = self.dtype if L <= _FLOAT32_LOG_SCALE else np.dtype(np.float64)
        if dtype != np.float64:  # no subnormal weights (slow arithmetic): J v moves < 1e-20
            A = np.where(A < _NEGLIGIBLE_WEIGHT, 0.0, A)
        parts = (*(part.astype(dtype, copy=False) for part in (s, Y, YBt, YB, A, w)),
                 math.exp(L))
        self._cache = [*self._cache[-(_CACHED - 1):], (t, w.copy(), parts)]
        return parts

    def weights(self, t: float, w: np.ndarray) -> np.ndarray:
        """The attention ``A(t, w)`` the products use (in ``dtype``; weights below 1e-20 are 0
        in float32), kept for the next products at the same point."""
        return self._at(t, w)[4]

    def apply(self, t: float, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``J(t, w) v`` (same shape as ``w``)."""
        field = self.field
        s, Y, YBt, YB, A, w, scale = self._at(t, w)
        size = float(np.max(np.abs(v)))
        if size == 0.0:
            return np.zeros(v.shape)
        v = (v / size).astype(w.dtype, copy=False)  # J is linear: J v = |v| J(v/|v|)
        dY = v * s
        if field.B is None:  # dS̃ = dY Yᵀ + Y dYᵀ
            M = dY @ Y.T
            G = M + M.T
        else:
            G = dY @ YBt.T + YB @ dY.T
        G *= scale
        AG = A * G
        dA = AG - A * AG.sum(axis=1, keepdims=True)
        out = dA @ w + A @ v - v
        out *= field.lam
        return size * out.astype(np.float64, copy=False)


class LinearisedGlobalError:
    r"""The propagated global error ``e_k`` of a run, fed one accepted step at a time.

    An observer of :class:`~verify.flow.solvers.DOP853` (its ``observer`` argument): each call
    ``(t_k, y_k, t_{k+1}, y_{k+1}, f_k, f_{k+1}, δ_k)`` advances

    .. math:: e_{k+1} = Φ_k e_k + δ_k

    with ``Φ_k e_k`` one ``method`` step of ``ė = J(t, y_run(t)) e``: ``"heun"`` (``J`` at
    ``y_k`` and ``y_{k+1}``, two products per step, one new point) or ``"rk4"`` (the midpoint
    state from the cubic Hermite interpolant of ``y_k, f_k, y_{k+1}, f_{k+1}``: four products,
    two new points; Heun's amplification ``|1 + z + z²/2|`` exceeds 1 on the imaginary axis,
    so it drifts where ``J`` turns and ``h|J| ≳ 1``: measured on a rotation at ``hω ≈ 1``,
    ×10⁵ too large). ``times[k]``, ``norms[k]`` (``max|e_k|``) and, at the times in ``keep``
    (the first step end at or after each, once), ``kept``: ``(t_k, y_k, e_k)``.

    Parameters
    ----------
    linearisation : object with ``apply(t, y, v) -> J(t, y) v``
    method : {"rk4", "heun"}
    keep : list of float, optional
        Times at which to keep ``e`` (the estimate is only known at step ends).
    """

    def __init__(self, linearisation, method: str = "rk4",
                 keep: list[float] | None = None) -> None:
        if method not in ("heun", "rk4"):
            raise InvalidArgument(f"method must be 'heun' or 'rk4', not {method!r}")
        self.linearisation = linearisation
        self.jvp: Callable = linearisation.apply
        self.method = method
        self.error: np.ndarray | None = None
        self.times: list[float] = []
        self.norms: list[float] = []
        self.keep = sorted(keep or [])
        self.kept: list[tuple[float, np.ndarray, np.ndarray]] = []

    def __call__(self, t0: float, y0: np.ndarray, t1: float, y1: np.ndarray, f0: np.ndarray,
                 f1: np.ndarray, local_error: np.ndarray, added: str = "signed") -> None:
        """Advance ``e`` over the step; ``added`` says how ``δ_k`` is added to ``Φ_k e_k``:
        ``"signed"`` as it is, ``"aligned"`` with the sign of ``⟨Φ_k e_k, δ_k⟩`` (no
        cancellation between steps: ``|e_{k+1}|² ≥ |Φ_k e_k|² + |δ_k|²``), ``"entrywise"``
        entry by entry with the sign of ``Φ_k e_k`` (``|e_{k+1}| = |Φ_k e_k| + |δ_k|`` in
        each entry)."""
        e = np.zeros_like(y0) if self.error is None else self.error
        h = t1 - t0
        if self.method == "heun":
            k1 = self.jvp(t0, y0, e)
            k2 = self.jvp(t1, y1, e + h * k1)
            e = e + 0.5 * h * (k1 + k2)
        else:
            tm, ym = t0 + 0.5 * h, 0.5 * (y0 + y1) + 0.125 * h * (f0 - f1)  # Hermite midpoint
            k1 = self.jvp(t0, y0, e)
            k2 = self.jvp(tm, ym, e + 0.5 * h * k1)
            k3 = self.jvp(tm, ym, e + 0.5 * h * k2)
            k4 = self.jvp(t1, y1, e + h * k3)
            e = e + h / 6.0 * (k1 + 2.0 * (k2 + k3) + k4)
        if added == "aligned":
            self.error = e - local_error if np.vdot(e, local_error) < 0 else e + local_error
        elif added == "entrywise":
            self.error = e + np.where(e < 0, -1.0, 1.0) * np.abs(local_error)
        elif added == "signed":
            self.error = e + local_error
        else:
            raise InvalidArgument(f"added must be 'signed', 'aligned' or 'entrywise', not "
                                  f"{added!r}")
        self.times.append(float(t1))
        self.norms.append(float(np.max(np.abs(self.error))))
        if self.keep and self.keep[0] <= t1:
            self.kept.append((float(t1), y1.copy(), self.error.copy()))
            while self.keep and self.keep[0] <= t1:
                self.keep.pop(0)


def dop853_step(fun: Callable, t: float, y: np.ndarray, f: np.ndarray, h: float) -> np.ndarray:
    r"""One step of size ``h`` of SciPy's DOP853 (Dormand–Prince 8, its Butcher tableau
    ``A, B, C``) from ``(t, y)`` with ``f = fun(t, y)`` given: ``y + h Σ_s B_s K_s`` with
    ``K_s = fun(t + C_s h, y + h Σ_{r<s} A_{sr} K_r)``, eleven evaluations (the step SciPy's
    solver takes up to the order of the sums, without its error estimate or the field at the
    end).

    >>> import numpy as np
    >>> y1 = dop853_step(lambda t, y: -y, 0.0, np.array([1.0]), np.array([-1.0]), 0.5)
    >>> bool(abs(y1[0] - np.exp(-0.5)) < 1e-9)
    True
    """
    A, B, C = SciPyDOP853.A, SciPyDOP853.B, SciPyDOP853.C
    K = [f]
    for s in range(1, len(B)):
        increment = A[s, 0] * K[0]
        for r in range(1, s):
            if A[s, r] != 0.0:
                increment = increment + A[s, r] * K[r]
        K.append(fun(t + C[s] * h, y + h * increment))
    out = B[0] * K[0]
    for s in range(1, len(B)):
        if B[s] != 0.0:
            out = out + B[s] * K[s]
    return y + h * out


class StepDoubling:
    r"""The local error of each accepted DOP853 step by step doubling, handed to ``inner``
    (e.g. :class:`LinearisedGlobalError`) in place of DOP853's embedded estimate.

    A DOP853 step of size ``h`` from ``(t_k, y_k)`` has the local error
    ``δ_k = y_{k+1} − φ(t_{k+1}; t_k, y_k) = C_k h^9 + O(h^{10})``; two steps of size ``h/2``
    from the same state reach ``ŷ`` with ``2 C_k (h/2)^9 + O(h^{10})``, so

    .. math:: δ_k = \tfrac{256}{255}\,(y_{k+1} − ŷ) + O(h^{10}),

    the local error to leading order, with its sign and direction (DOP853's embedded estimate is
    of order 6–8 in ``h`` and not of the error's sign: on the 128×128 run the true local error
    is 0.0014–347 times it, step by step). It costs 23 field evaluations per step (the run's
    own steps cost ~16.5 with their rejections). It rests on the asymptotic regime
    of the step (``C_k`` the same for ``h`` and ``h/2``, the ``O(h^{10})`` term small): an
    *estimate*, whose coverage ``benchmarks/global_error.py --doubling`` measures.

    Every step is doubled: no screen was found that is safe (one trusting DOP853's estimate on
    the steps it does not double under-covers ×2.9–×3.7 on the 128×128 run:
    ``benchmarks/global_error.py --screening``; a structural one, :class:`ScreenedDoubling`,
    doubles most steps there or misses the step that matters: ``--structural``).

    Parameters
    ----------
    fun : callable ``(t, y) -> ẏ``
        The field the run integrates (in its coordinates, e.g. an
        :class:`~verify.flow.fields.EigenRescaledField`).
    inner : callable, optional
        Gets ``(t_k, y_k, t_{k+1}, y_{k+1}, f_k, f_{k+1}, δ_k)`` for each step; ``None`` when
        only :meth:`local_error` is used.

    >>> import numpy as np
    >>> from verify.flow.solvers import DOP853, StepController
    >>> M = np.array([[-1.0, 0.0], [0.0, -2.0]])
    >>> estimate = LinearisedGlobalError(type("J", (), {"apply": lambda s, t, y, v: v @ M})())
    >>> run = DOP853(observer=StepDoubling(lambda t, y: y @ M, estimate)).segment(
    ...     lambda t, y: y @ M, None, [0.0, 2.0], 1, 0.0, np.array([[1.0, 1.0]]),
    ...     StepController(1e-8, 1e-12))
    >>> true = np.abs(run.states[-1] - np.exp([-2.0, -4.0])).max()
    >>> bool(0.5 < true / estimate.norms[-1] < 2)
    True
    """

    def __init__(self, fun: Callable, inner: Callable | None = None) -> None:
        self.fun, self.inner = fun, inner

    def local_error(self, t0: float, y0: np.ndarray, t1: float, y1: np.ndarray,
                    f0: np.ndarray) -> np.ndarray:
        """``256/255 · (y_{k+1} − ŷ)``, ``ŷ`` two DOP853 steps of ``h/2`` from ``y_k``."""
        h = t1 - t0
        tm = t0 + 0.5 * h
        ym = dop853_step(self.fun, t0, y0, f0, tm - t0)
        y_half = dop853_step(self.fun, tm, ym, self.fun(tm, ym), t1 - tm)
        return (256.0 / 255.0) * (y1 - y_half)

    def __call__(self, t0: float, y0: np.ndarray, t1: float, y1: np.ndarray, f0: np.ndarray,
                 f1: np.ndarray, local_error: np.ndarray) -> None:
        self.inner(t0, y0, t1, y1, f0, f1, self.local_error(t0, y0, t1, y1, f0))


def attention_change(A0: np.ndarray, A1: np.ndarray) -> tuple[float, float]:
    r"""How much the attention moves over a step, from its weights ``A0``, ``A1`` at the two
    ends (nothing else): ``(change, crossing)``,

    .. math:: \text{change} = \max_i \sum_j |A1_{ij} − A0_{ij}|,\qquad
              \text{crossing} = \max_i \frac{|g_i(t_{k+1}) − g_i(t_k)|}
                                          {\min(|g_i(t_k)|, |g_i(t_{k+1})|)},

    ``g_i = \log(A_{ia} / A_{ib})`` the gap of row ``i``'s two leading scores (``a, b`` the
    leading pair at either end; the normalisation cancels): the gap changes over the step by
    more than its size where ``crossing ≥ 1``, and the leaders cross where it changes sign.
    Rows whose second weight is below ``1e-20`` at both ends (a gap beyond 46) do not count.

    >>> A0 = np.array([[0.6, 0.4], [0.5, 0.5]])
    >>> change, crossing = attention_change(A0, np.array([[0.4, 0.6], [0.5, 0.5]]))
    >>> round(change, 2), crossing        # row 0's leaders cross: the gap changes sign
    (0.4, 2.0)
    """
    change = float(np.abs(A1 - A0).sum(axis=1).max())
    rows = np.arange(A0.shape[0])
    crossing = 0.0
    for A in (A0, A1):
        pair = np.argpartition(-A, 1, axis=1)[:, :2]
        gaps = [np.log(np.maximum(B[rows, pair[:, 0]], _NEGLIGIBLE_WEIGHT)
                       / np.maximum(B[rows, pair[:, 1]], _NEGLIGIBLE_WEIGHT)) for B in (A0, A1)]
        smaller = np.minimum(np.abs(gaps[0]), np.abs(gaps[1]))
        live = smaller < -math.log(_NEGLIGIBLE_WEIGHT)
        if np.any(live):
            moved = np.abs(gaps[1] - gaps[0])[live]
            crossing = max(crossing, float(np.max(moved / np.maximum(smaller[live], 1e-300))))
    return change, crossing


class ScreenedDoubling:
    r"""Step doubling (:class:`StepDoubling`) on the steps where the attention moves, DOP853's
    embedded estimate elsewhere, handed to a :class:`LinearisedGlobalError` (a prototype).

    A step is doubled when, by :func:`attention_change` of the weights at its two ends, a row's
    attention moves by ``change`` or more in ``ℓ¹``, or a row's leading gap moves by
    ``crossing`` times its size or more: where the softmax turns within the step, and DOP853's
    embedded estimate was measured ×87–×264 below the true local error (the 128×128 run at
    ``t ≈ 0.824``). The rule reads the run's own weights only (the linearisation computes them
    at the step's ends anyway), never a reference. Elsewhere DOP853's estimate is added as
    ``added`` says (:meth:`LinearisedGlobalError.__call__`).

    Parameters
    ----------
    fun : callable ``(t, y) -> ẏ``
        The field of the run.
    inner : LinearisedGlobalError
        Over an :class:`EigenLinearisation` (whose weights the screen reads).
    change, crossing : float
        The screen's thresholds.
    added : {"signed", "aligned", "entrywise"}
        How the undoubled steps' estimates are added.

    ``doubled[k]`` and ``screens[k] = (change, crossing)`` record each step.

    >>> import numpy as np
    >>> from verify.flow.solvers import DOP853, StepController
    >>> from verify.flow.fields import EigenRescaledField
    >>> from verify.model import Model
    >>> field = EigenRescaledField(Model(V=[[1, 0], [0, -1]]), 3)
    >>> w0 = np.array([[0.3, 0.1], [-0.2, 0.4], [0.5, -0.3]])
    >>> estimate = LinearisedGlobalError(EigenLinearisation(field))
    >>> screened = ScreenedDoubling(field, estimate, change=0.01)
    >>> run = DOP853(observer=screened).segment(
    ...     field, None, [0.0, 1.0], 1, 0.0, w0, StepController(1e-8, 1e-10))
    >>> 0 < sum(screened.doubled) < run.steps
    True
    """

    def __init__(self, fun: Callable, inner: LinearisedGlobalError, change: float = 0.1,
                 crossing: float = 1.0, added: str = "aligned") -> None:
        self.doubling = StepDoubling(fun, None)
        self.inner, self.change, self.crossing, self.added = inner, change, crossing, added
        self.weights = inner.linearisation.weights
        self.doubled: list[bool] = []
        self.screens: list[tuple[float, float]] = []

    def __call__(self, t0: float, y0: np.ndarray, t1: float, y1: np.ndarray, f0: np.ndarray,
                 f1: np.ndarray, local_error: np.ndarray) -> None:
        change, crossing = attention_change(self.weights(t0, y0), self.weights(t1, y1))
        doubled = change >= self.change or crossing >= self.crossing
        self.doubled.append(doubled)
        self.screens.append((change, crossing))
        if doubled:
            self.inner(t0, y0, t1, y1, f0, f1,
                       self.doubling.local_error(t0, y0, t1, y1, f0))
        else:
            self.inner(t0, y0, t1, y1, f0, f1, local_error, self.added)
