r"""Gragg–Bulirsch–Stoer extrapolation in any precision.

Solves :math:`\dot y = f(t, y)` by Gragg's modified midpoint rule, extrapolated to zero step
size in :math:`h^2` (Aitken–Neville), with the step sequence :math:`n_j = 2j`. For a step
:math:`H` and :math:`h = H/n_j`,

.. math::

    z_0 = y, \quad z_1 = z_0 + h f(t, z_0), \quad
    z_{m+1} = z_{m-1} + 2h\, f(t + mh, z_m), \qquad T_{j,1} = z_{n_j},

    T_{j,k} = T_{j,k-1} + \frac{T_{j,k-1} - T_{j-1,k-1}}{(n_j/n_{j-k+1})^2 - 1},

and :math:`T_{k,k}` has order :math:`2k` (Hairer–Nørsett–Wanner, *Solving ODEs I*, §II.9).
Every coefficient is an exact rational turned into a backend number by ``backend.scalar``, and
every time is an exact :class:`~fractions.Fraction`, so the method keeps its order at any
precision and hits each checkpoint exactly. On states it uses only ``y + y``, ``y - y``,
``c * y`` and ``backend.error_norm``; with :class:`~verify.numerics.Arb` only ball midpoints
are kept between steps (the radii of this non-validated integration mean nothing).

Examples
--------
:math:`y' = y`, :math:`y(0) = 1` at 128 bits: :math:`y(1) = e` to about 30 digits.

>>> from flint import arb
>>> from verify.numerics import Arb
>>> b = Arb(bits=128)
>>> res = integrate_extrapolation(lambda t, y: y, [0, 1], b.from_exact([[1]]), backend=b,
...                               rtol=1e-32, atol=1e-32)
>>> res.status, res.ts[-1]
('success', Fraction(1, 1))
>>> print(res.ys[-1][0, 0].str(30, radius=False))  # computed
2.71828182845904523536028747135
>>> with b.working_precision():
...     print(arb(1).exp().str(30, radius=False))  # exact e
2.71828182845904523536028747135
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import to_rational
from verify.numerics._backends import Backend

__all__ = ["GraggBulirschStoer", "IntegrationResult", "integrate_extrapolation", "lebesgue",
           "reachable_rtol"]

# Step-size factors of ODEX (HNW II.9): H_j = H * SAFETY * (SAFETY_ERR / err_j)^(1/(2j-1)),
# clamped to [FAC_MIN^(1/(2j-1)) / FAC_MAX, FAC_MAX].
SAFETY = 0.94
SAFETY_ERR = 0.65
FAC_MIN = 0.02
FAC_MAX = 4.0
# Order control: prefer fewer columns if the work per unit step is 0.8 times as large; more
# columns if it is at most 0.9 times as large.
ORDER_DOWN = 0.8
ORDER_UP = 0.9
# A trial step whose result is not finite is retried with H/4 at most this many times in a row.
MAX_NONFINITE_RETRIES = 8
# A step may accept before ODEX's order window (row k - 1) from row MIN_EARLY_ROW on, where the
# estimates have shrunk from row to row and the last is EARLY_ERR inside the tolerance
# (_Run.converged_early).
MIN_EARLY_ROW = 4
EARLY_ERR = 1e-3
# An adaptive step uses k columns only if ROUNDOFF_MARGIN * lebesgue(k) * epsilon <= rtol, and
# rtol is raised (with a warning) until MIN_COLUMNS columns qualify: 264 * epsilon, 5.9e-14 in
# float64 (SciPy's Runge-Kutta floor is 100 * epsilon).
ROUNDOFF_MARGIN = 10
MIN_COLUMNS = 6


@functools.cache
def lebesgue(k: int) -> Fraction:
    r"""Round-off amplification of :math:`T_{kk}`, exactly: :math:`\sum_i |c_i|`.

    :math:`T_{kk} = \sum_i c_i T_{i1}` with :math:`c_i = \prod_{m \ne i} x_m/(x_m - x_i)`,
    :math:`x_i = n_i^{-2}`: rounding errors :math:`\delta` in the :math:`T_{i1}` give at most
    :math:`\delta \sum_i |c_i|` in :math:`T_{kk}` (about :math:`2.2^k`).

    Examples
    --------
    >>> lebesgue(2), float(lebesgue(20)) > 1e6
    (Fraction(5, 3), True)
    """
    x = [Fraction(1, (2 * j) ** 2) for j in range(1, k + 1)]
    coefficients = (math.prod((x[m] / (x[m] - x[i]) for m in range(k) if m != i), start=Fraction(1))
                    for i in range(k))
    return sum((abs(c) for c in coefficients), start=Fraction(0))


class GraggBulirschStoer:
    """The GBS extrapolation method; order :math:`2k` after :math:`k` columns.

    Parameters
    ----------
    max_columns : int, default 30
        Largest number of columns (rows of the tableau) an adaptive step may use, in [3, 40];
        the order is chosen between 4 and ``2 * max_columns`` by the work per unit step. A run
        also uses only the columns :math:`k` whose round-off amplification keeps
        ``10 * lebesgue(k) * backend.epsilon <= rtol`` (about 9 columns in float64 at
        ``rtol=1e-12``, 30 at 300 bits and ``rtol=1e-80``): give the backend a few dozen bits
        more than ``rtol`` needs.
    fixed_columns : int, optional
        Use exactly this many columns in every step (order ``2 * fixed_columns``), no order
        control and no round-off limit. Needed by ``integrate_extrapolation(fixed_step=...)``.

    Examples
    --------
    >>> GraggBulirschStoer(fixed_columns=3).order
    6
    >>> GraggBulirschStoer(max_columns=4).step_sequence
    [2, 4, 6, 8]
    """

    def __init__(self, *, max_columns: int = 30, fixed_columns: int | None = None) -> None:
        _check_int("max_columns", max_columns, 3, 40)
        if fixed_columns is not None:
            _check_int("fixed_columns", fixed_columns, 1, 40)
        self.max_columns = max_columns
        self.fixed_columns = fixed_columns

    @property
    def order(self) -> int:
        """Nominal order: ``2 * fixed_columns``, else the largest order ``2 * max_columns``."""
        return 2 * (self.fixed_columns or self.max_columns)

    @property
    def step_sequence(self) -> list[int]:
        """The substep numbers :math:`n_j = 2j` of the rows that may be used."""
        return [2 * j for j in range(1, (self.fixed_columns or self.max_columns) + 1)]

    def __repr__(self) -> str:
        if self.fixed_columns is not None:
            return f"GraggBulirschStoer(fixed_columns={self.fixed_columns})"
        return f"GraggBulirschStoer(max_columns={self.max_columns})"


@dataclass
class IntegrationResult:
    """What :func:`integrate_extrapolation` returns.

    Attributes
    ----------
    ys : list
        The states at the checkpoints reached, in the order of ``t_eval`` (``ys[0]`` is the
        projected initial state). On failure, only the checkpoints reached are listed.
    ts : list of Fraction
        The exact checkpoint times matching ``ys``.
    status : str
        ``"success"``, ``"max_steps"``, ``"step_size_underflow"``, ``"nonfinite"``, (with a
        monitor) ``"stalled"`` or ``"budget"``, or (with ``switch``) ``"switched"``.
    message : str
        What happened, and on failure what to change.
    stats : dict
        ``steps`` (attempted), ``accepted``, ``rejected``, ``rhs_evals``, ``columns_used``
        (histogram ``{columns: accepted steps}``), ``rtol`` (the tolerance used) and ``t_final``
        (the exact time reached).
    """

    ys: list
    ts: list
    status: str
    message: str
    stats: dict = field(default_factory=dict)
    switch: object = None  # what ``switch`` returned, when it ended the run

    @property
    def success(self) -> bool:
        return self.status == "success"


def reachable_rtol(backend: Backend) -> float:
    """The smallest ``rtol`` :func:`integrate_extrapolation` keeps in ``backend``'s arithmetic:
    ``ROUNDOFF_MARGIN · lebesgue(MIN_COLUMNS) · ε`` (a smaller one is raised to it, with a
    warning), so that :data:`MIN_COLUMNS` columns stay above the round-off they amplify.

    >>> from verify.numerics import Float64
    >>> f"{reachable_rtol(Float64()):.3g}"
    '5.87e-14'
    """
    return ROUNDOFF_MARGIN * float(lebesgue(MIN_COLUMNS)) * backend.epsilon


def integrate_extrapolation(
    field: Callable, t_eval: Sequence, y0, *, backend: Backend, rtol: float, atol: float,
    solver: GraggBulirschStoer | None = None, first_step=None, max_steps: int = 100_000,
    project: Callable | None = None, fixed_step=None, monitor=None,
    switch: Callable | None = None, switch_each_step: bool = False,
) -> IntegrationResult:
    r"""Integrate :math:`\dot y = f(t, y)` through the checkpoints ``t_eval``.

    A step is accepted when ``backend.error_norm(T_jj - T_{j,j-1}, y, T_jj, atol, rtol) <= 1``,
    i.e. when the RMS of the error estimate in units of ``atol + rtol·|y|`` is at most 1; the
    more accurate :math:`T_{jj}` is kept (local extrapolation). Steps are clipped so every
    checkpoint is hit exactly.

    Step size and columns follow ODEX (HNW §II.9) with the changes marked *ODEX:* below. Row
    :math:`i` proposes :math:`H_i = H \cdot 0.94 (0.65/err_i)^{1/(2i-1)}`, clamped to
    :math:`[0.02^{1/(2i-1)}/4, 4]`. Row :math:`i` is *at the round-off floor* when
    :math:`err_i \le \mathrm{lebesgue}(i)\,\varepsilon/\mathrm{rtol}` (:func:`lebesgue`;
    :math:`\varepsilon` of the step's precision): the rounding of the :math:`T_{m1}` amplified by
    the extrapolation, so the row has converged and its truncation error is smaller still. A
    step with target :math:`k` columns is

    * **accepted** at the first row :math:`j \ge k` with :math:`err_j \le 1`; at row
      :math:`k-1` only if also :math:`err_{k-2} \le 1`, or row :math:`k-1` is at the floor
      (*ODEX:* one estimate there. A step of :math:`H = 0.046` ending inside a sharp switch of
      the attention had :math:`err_{2,3,4}` = 1e9, 8e4, 0.59 tolerances and a local error of
      1e11 tolerances; a good step 0.04 earlier showed the same pattern, so no single estimate
      tells them apart; a second row within the tolerance rejects the bad one. At the floor
      the row has converged and one estimate says so); or at any row :math:`4 \le j < k` where
      every estimate from row 3 on shrank and :math:`err_j \le 10^{-3}` (*ODEX:* not before
      :math:`k-1`. A step short for its order, such as the first step's guess or a step clipped at a
      checkpoint, has converged there; ODEX's window would build rows that only push the error
      further below the tolerance);
    * **rejected** at row :math:`k+1`, or from row :math:`k-1` on when the ratio of the last
      two estimates, extrapolated geometrically, predicts no convergence by row :math:`k+1`
      (*ODEX:* a fixed bound, which rejects good small steps again and again at high
      precision). With one estimate only (row 2) ODEX's bound :math:`err_2 > ((k+1)k)^2` is
      kept for :math:`k = 2` and not used for :math:`k \ge 3` (*ODEX:* used there). Where row 3
      is at the floor and row 2 is not, it rejects every step long enough to let :math:`H`
      grow, and the run stalls: :math:`y' = 4t^3` at 123 bits, rtol 1e-26, at most 4 columns
      (2 000 steps reach :math:`t = 1.4 \cdot 10^{-4}`); the steps after a kink of a ReLU
      field at 25 digits once the row :math:`k-1` rule above was added (the order control
      had lowered :math:`k` to 3 for rows 3 and 4 at the floor);
    * continued, with the work per unit step :math:`W_i = A_i/H_i` (:math:`A_i = i^2 + 1`
      evaluations; :math:`H_i` unclamped), with the cheapest row's columns if
      :math:`W < 0.8 W_j` (*ODEX:* looks only at :math:`j-1`), else :math:`j+1` if accepted and
      :math:`W_j < 0.9 W_{j-1}`, else :math:`j`; never more columns nor a longer step right
      after a rejection. A row at the floor may be the cheapest: its :math:`W_i` over-states
      its work, so fewer columns are safe there.

    Parameters
    ----------
    field : callable ``field(t, y) -> dy/dt``
        ``t`` is a backend scalar (``float`` or ``arb``), ``y`` and the result are states.
    t_eval : sequence of rationals, strictly increasing
        ``t_eval[0]`` is the initial time; the state is returned at every entry. Floats are
        taken at their exact binary value, strings like ``"1/3"`` exactly.
    y0 : state
        The initial state (``numpy`` array for Float64, ``arb_mat`` for Arb; build it inside
        ``backend.working_precision()`` unless its entries are exact at 53 bits).
    backend : Backend
        The arithmetic; all work runs inside ``backend.working_precision()``, each step's
        tableau inside ``backend.step_precision(t + H)`` (an ``Arb(bits_until=...)`` whose
        precision grows with time lowers it for the early steps).
    rtol, atol : float
        Positive tolerances. ``rtol`` below ``264 * backend.epsilon`` (the round-off of six
        columns, with a margin of 10) is raised to that value with a warning.
    solver : GraggBulirschStoer, optional
        Defaults to ``GraggBulirschStoer()``.
    first_step : rational, optional
        First trial step; by default Hairer's starting-step heuristic (HNW II.4) is used.
    max_steps : int, default 100000
        Limit on attempted steps (accepted and rejected).
    project : callable ``project(y) -> y``, optional
        Applied to ``y0`` and after every accepted step (e.g. onto an invariant subspace).
    fixed_step : rational, optional
        Take steps of exactly this size (the last one before a checkpoint may be shorter)
        with ``solver.fixed_columns`` columns and no error control.
    monitor : RunMonitor, optional
        Checked after every attempted step (:mod:`verify.numerics._monitor`): progress lines,
        a stall (status ``"stalled"``) or a used-up wall-clock budget (status ``"budget"``) end
        the run with the checkpoints reached.
    switch : callable ``switch(t, y) -> object or None``, optional
        Called at every checkpoint reached before the last (``switch_each_step``: also after
        every accepted step between checkpoints); a result other than ``None`` ends the run
        with status ``"switched"``, the checkpoints reached so far, and that result as
        ``IntegrationResult.switch`` (e.g. a closed form that continues the run from ``t``).

    Returns
    -------
    IntegrationResult
        States at the checkpoints reached, exact times, status, message and statistics.

    Raises
    ------
    InvalidArgument
        For bad tolerances, times, step sizes, or ``fixed_step`` without ``fixed_columns``.
    """
    solver = GraggBulirschStoer() if solver is None else solver
    if not isinstance(solver, GraggBulirschStoer):
        raise InvalidArgument(f"solver={solver!r} ({type(solver).__name__}) is not a "
                              "GraggBulirschStoer; pass solver=GraggBulirschStoer(...).")
    if not isinstance(backend, Backend):
        raise InvalidArgument(f"backend={backend!r} ({type(backend).__name__}) is not a Backend; "
                              "pass backend=Float64() or backend=Arb(bits=...).")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < math.inf:
            raise InvalidArgument(f"{name}={tol!r} ({type(tol).__name__}) must be a positive "
                                  f"finite float; for pure relative control use {name}=1e-300.")
    _check_int("max_steps", max_steps, 1, None)
    times = [to_rational(v, f"t_eval[{i}]")[0] for i, v in enumerate(t_eval)]
    if not times or any(b <= a for a, b in zip(times, times[1:], strict=False)):
        raise InvalidArgument(f"t_eval={list(t_eval)!r} must be a non-empty, strictly increasing "
                              "sequence of times; sort it and remove repeats.")
    steps = {"first_step": first_step, "fixed_step": fixed_step}
    for name, value in steps.items():
        if value is not None:
            steps[name] = to_rational(value, name)[0]
            if steps[name] <= 0:
                raise InvalidArgument(f"{name}={value!r} must be positive.")
    if fixed_step is not None and solver.fixed_columns is None:
        raise InvalidArgument("fixed_step needs a fixed number of columns; pass "
                              "solver=GraggBulirschStoer(fixed_columns=k).")
    if fixed_step is None and solver.fixed_columns == 1:
        raise InvalidArgument("fixed_columns=1 (int) gives no error estimate; adaptive steps "
                              "need fixed_columns >= 2, or pass fixed_step=...")
    floor = reachable_rtol(backend)
    if rtol < floor:
        warnings.warn(f"rtol={rtol:g} is below what {backend!r} can reach (round-off); using "
                      f"rtol={floor:.3g}. Use a backend with more bits.", stacklevel=2)
        rtol = floor
    # Non-finite values are reported through the status, so NumPy's warnings would be noise.
    with backend.working_precision(), np.errstate(over="ignore", invalid="ignore"):
        run = _Run(field, backend, solver, float(rtol), float(atol), project)
        run.monitor, run.switch, run.switch_each_step = monitor, switch, switch_each_step
        return run.integrate(times, y0, steps["first_step"], steps["fixed_step"], max_steps)


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low or (
            high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise InvalidArgument(f"{name}={value!r} ({type(value).__name__}) must be an integer "
                              f"{bound}.")


def _is_finite(state) -> bool:
    """Whether every entry (every ball midpoint for arb) is a finite number."""
    if isinstance(state, np.ndarray):
        return bool(np.all(np.isfinite(state)))
    entries = getattr(state, "entries", None)
    if entries is not None:
        return all(v.mid().is_finite() for v in entries())
    return bool(np.all(np.isfinite(np.asarray(state, dtype=float))))


class _Run:
    """One integration: the field, the backend, the exact tableau weights and the counters."""

    def __init__(self, field, backend, solver, rtol, atol, project) -> None:
        self.field, self.backend, self.solver = field, backend, solver
        self.rtol, self.atol, self.project = rtol, atol, project
        self.monitor = self.switch = None
        self.roundoff = backend.epsilon / rtol  # ε/rtol of the step attempted last
        self.switch_each_step = False
        self.kmax = solver.fixed_columns or max(
            (k for k in range(3, solver.max_columns + 1)
             if ROUNDOFF_MARGIN * float(lebesgue(k)) * backend.epsilon <= rtol), default=3)
        # weights[j][c] = 1 / ((n_j / n_{j-c})^2 - 1) for rows j >= 1 (0-based, n_j = 2(j+1)).
        self.weights = [[backend.scalar(Fraction((j - c + 1) ** 2, (j + 1) ** 2 - (j - c + 1) ** 2))
                         for c in range(1, j + 1)] for j in range(self.kmax)]
        self.stats = {"steps": 0, "accepted": 0, "rejected": 0, "rhs_evals": 0,
                      "columns_used": {}, "rtol": rtol, "max_columns": self.kmax}

    def f(self, t: Fraction, y):
        self.stats["rhs_evals"] += 1
        return self.field(self.backend.scalar(t), y)

    def settle(self, y):
        """Project, then drop ball radii (Arb)."""
        if self.project is not None:
            y = self.project(y)
        midpoint = getattr(self.backend, "midpoint", None)
        return y if midpoint is None else midpoint(y)

    def norm(self, x, y0, y1) -> float:
        """``backend.error_norm`` (``inf`` when an error exceeds the float range: a rejection)."""
        with np.errstate(over="ignore"):
            return self.backend.error_norm(x, y0, y1, self.atol, self.rtol)

    def midpoint_rule(self, t: Fraction, y, f0, H: Fraction, n: int):
        h = H / n
        hs, h2 = self.backend.scalar(h), self.backend.scalar(2 * h)
        z0, z1 = y, y + hs * f0
        self.stats["rhs_evals"] += n - 1
        for tm in self.backend.substep_times(t, h, n - 1):
            z0, z1 = z1, z0 + h2 * self.field(tm, z1)
        return z1

    @staticmethod
    def factor(err: float, j: int, clamp: bool = True) -> float:
        """Step-size factor proposed from the error estimate of row j (1-based)."""
        expo = 1.0 / (2 * j - 1)
        err = min(max(err, 1e-300), 1e300)
        fac = SAFETY * math.exp(expo * (math.log(SAFETY_ERR) - math.log(err)))
        return min(FAC_MAX, max(FAC_MIN ** expo / FAC_MAX, fac)) if clamp else fac

    def attempt(self, t, y, f0, H, k, fixed):
        """Build rows 1.. of the tableau, at the backend's precision for a step ending at
        ``t + H`` (:meth:`~verify.numerics.Backend.step_precision`); return (verdict, state,
        row j, errors by row)."""
        self.roundoff = self.backend.step_epsilon(t + H) / self.rtol
        with self.backend.step_precision(t + H):
            return self._attempt(t, y, f0, H, k, fixed)

    def at_floor(self, errs: dict, j: int) -> bool:
        """Whether row ``j``'s estimate is at the round-off floor of the step just attempted,
        ``err_j ≤ lebesgue(j)·ε/rtol``: the rounding of the ``T_{i1}`` amplified by the
        extrapolation, in tolerance units. Such an estimate says the row has converged, not how
        long a step it could take (its truncation error is smaller still, by an unknown
        amount)."""
        return errs[j] <= float(lebesgue(j)) * self.roundoff

    def accepts(self, errs: dict, j: int, k: int) -> bool:
        """Whether row ``j`` (``err_j ≤ 1``) may end a step with target ``k`` columns: from row
        ``k`` on; at row ``k - 1`` if row ``k - 2`` is within the tolerance too, or row ``k - 1``
        is at the round-off floor; before that only by :meth:`converged_early`."""
        if j >= k or j == k - 1 and (errs.get(j - 1, math.inf) <= 1 or self.at_floor(errs, j)):
            return True
        return self.converged_early(errs, j)

    def _attempt(self, t, y, f0, H, k, fixed):
        prev, errs = None, {}
        top = k if fixed else min(k + 1, self.kmax)
        for j in range(1, top + 1):
            row = [self.midpoint_rule(t, y, f0, H, 2 * j)]
            for c, w in enumerate(self.weights[j - 1], start=1):
                row.append(row[c - 1] + w * (row[c - 1] - prev[c - 1]))
            prev = row
            if j == 1:
                continue
            err = self.norm(row[-1] - row[-2], y, row[-1])
            if math.isnan(err) or not _is_finite(row[-1]):
                return "nonfinite", None, j, errs
            errs[j] = err  # may be inf when the float norm overflows: then it is just large
            if fixed:
                if j == k:
                    return ("accept" if err <= 1 else "reject"), row[-1], j, errs
            elif err <= 1 and self.accepts(errs, j, k):
                return "accept", row[-1], j, errs
            elif j == k + 1 or (j >= k - 1 and (j > 2 or k == 2)
                                and self.hopeless(errs, j, k + 1)):
                return "reject", None, j, errs
        if fixed:  # fixed_columns == 1: no error estimate, always accepted
            return "accept", prev[-1], top, errs
        raise AssertionError("unreachable: the last row always decides")  # pragma: no cover

    @staticmethod
    def converged_early(errs: dict, j: int) -> bool:
        """Whether row ``j < k`` may accept before ODEX's window (or at ``k - 1`` while row
        ``k - 2`` is above the tolerance): the step was short for its order — the first
        step's guess, a step clipped at a checkpoint —, which shows as an estimate far inside
        the tolerance (``err_j ≤ EARLY_ERR``) while every row from 3 on has shrunk it (row
        ``j`` is in the converging part of the tableau, not at an accidental small value).
        Building rows up to ``k - 1`` there only pushes the error further below the tolerance.
        (Accepting at ``err_j ≤ 1`` gave float64 runs on a symmetry's subspace in the paper
        suite estimates up to 500 times larger — within their tolerance, but margins thinner
        than the window's over-accuracy gave; far inside it they are unchanged.)"""
        return j >= MIN_EARLY_ROW and errs[j] <= EARLY_ERR and all(
            errs[i] < errs[i - 1] for i in range(3, j + 1))

    @staticmethod
    def hopeless(errs: dict, j: int, last: int) -> bool:
        """Whether row ``last`` cannot be expected to converge, judging from rows up to j.

        ODEX assumes the error shrinks by :math:`(n_1/n_i)^2` per row; with the small steps of
        high precision it shrinks far faster, and that rule would reject good steps again and
        again. So the ratio of the last two estimates is extrapolated geometrically (ODEX's
        bound is kept when only one estimate exists; :meth:`_attempt` asks it at row 2 only when
        ``k = 2``).
        """
        if j == 2 or errs[j - 1] == 0:  # ODEX's (n_{k+1} n_k / n_1^2)^2 for row k - 1
            return errs[j] > (last * (last - 1)) ** 2
        if not math.isfinite(errs[j]):
            return True
        ratio = errs[j] / errs[j - 1]
        if errs[j] == 0 or ratio == 0:
            return False
        return ratio >= 1 or math.log(errs[j]) + (last - j) * math.log(ratio) > 0

    def control(self, H, k, j, errs, accepted, after_reject, fixed):
        """Next (columns, step) from the errors of rows 2..j (ODEX-style, simplified)."""
        if not errs:
            return k, H
        facs = {i: self.factor(e, i) for i, e in errs.items()}
        if fixed:
            return k, float(H) * facs[j]
        # Work per unit step A_i / H_i (in units of 1/H), from the unclamped factors: once the
        # clamp bites, every row would propose the same step and fewer columns would always win.
        work = {i: (i * i + 1) / self.factor(e, i, clamp=False) for i, e in errs.items()}
        best = min(work, key=work.get)  # below the round-off floor high rows cost in vain
        if best < j and work[best] < ORDER_DOWN * work[j]:
            knew = best
        elif accepted and j == k - 1:
            knew = k
        elif accepted and (j == 2 or work[j] < ORDER_UP * work[j - 1]):
            knew = j + 1
        else:
            knew = j
        knew = max(2, min(self.kmax - 1, knew))
        if after_reject or not accepted:
            knew = min(knew, k)
        fac = facs[knew] if knew in facs else facs[j] * (knew * knew + 1) / (j * j + 1)
        if after_reject or not accepted:
            fac = min(fac, 1.0)
        return knew, float(H) * fac

    def initial_step(self, t, y, f0, order: int) -> Fraction:
        """Hairer's starting step (HNW II.4) with norms in tolerance units."""
        d0, d1 = self.norm(y, y, y), self.norm(f0, y, y)
        h0 = 0.01 * d0 / d1 if min(d0, d1) > 1e-5 and math.isfinite(d0 / d1) else 1e-6
        h0q = Fraction(h0)
        f1 = self.f(t + h0q, y + self.backend.scalar(h0q) * f0)
        top = max(d1, self.norm(f1 - f0, y, y) / h0)
        h1 = (0.01 / top) ** (1.0 / (order + 1)) if top > 1e-15 else max(1e-6, h0 * 1e-3)
        h = min(100 * h0, h1)
        return Fraction(h if 0 < h < math.inf else h0)

    def integrate(self, times, y0, first_step, fixed_step, max_steps) -> IntegrationResult:
        stats, fixed = self.stats, self.solver.fixed_columns is not None
        t = times[0]
        y = self.settle(y0)
        ys, ts = [y], [t]

        def finish(status: str, message: str) -> IntegrationResult:
            stats["t_final"] = t
            return IntegrationResult(ys, ts, status, message, stats)

        if not _is_finite(y):
            return finish("nonfinite", f"non-finite initial state at t={float(t):.6g}; "
                          "check y0 (and project).")
        k = self.kmax if fixed else max(
            2, min(self.kmax - 1, int(-0.6 * math.log10(self.rtol) + 1.5)))
        H = fixed_step if fixed_step is not None else first_step
        f0, after_reject, bad = None, False, 0
        for target in times[1:]:
            while t < target:
                if stats["steps"] >= max_steps:
                    return finish("max_steps", f"max_steps={max_steps} reached at "
                                  f"t={float(t):.6g}; raise max_steps or loosen rtol.")
                if f0 is None:
                    f0 = self.f(t, y)
                    if not _is_finite(f0):
                        return finish("nonfinite", f"field(t, y) is not finite at "
                                      f"t={float(t):.6g}; the solution is lost there.")
                if H is None:
                    H = self.initial_step(t, y, f0, 2 * k)
                remaining = target - t
                if fixed_step is not None:
                    H_try = min(fixed_step, remaining)
                else:
                    H_try = remaining if H >= remaining else (
                        remaining / 2 if 2 * H > remaining else H)
                stats["steps"] += 1
                if self.monitor is not None:
                    stop = self.monitor.check(float(t), stats["steps"])
                    if stop is not None:
                        return finish(*stop)
                verdict, y_new, j, errs = self.attempt(t, y, f0, H_try, k, fixed)
                if fixed_step is not None:
                    verdict = "accept" if verdict == "reject" else verdict
                if verdict == "nonfinite":
                    bad += 1
                    stats["rejected"] += 1
                    if bad > MAX_NONFINITE_RETRIES:
                        return finish("nonfinite", f"non-finite state in the step from "
                                      f"t={float(t):.6g} even with H={float(H_try):.3g}; "
                                      "the field is not finite there or the solution blows up.")
                    H, after_reject = H_try / 4, True
                    continue
                bad = 0
                accepted = verdict == "accept"
                if fixed_step is None:
                    k, h_next = self.control(H_try, k, j, errs, accepted, after_reject, fixed)
                    h_next = Fraction(h_next)
                    if accepted and H_try < H:  # the step was clipped: keep the planned size
                        h_next = max(h_next, H)
                    H = h_next
                if accepted:
                    t, y, f0 = t + H_try, self.settle(y_new), None
                    stats["accepted"] += 1
                    stats["columns_used"][j] = stats["columns_used"].get(j, 0) + 1
                    if self.switch_each_step and self.switch is not None and t < target:
                        taken = self.switch(t, y)
                        if taken is not None:
                            result = finish("switched", f"switched at t={float(t):.6g}.")
                            result.switch = taken
                            return result
                else:
                    stats["rejected"] += 1
                after_reject = not accepted
                if fixed_step is None and (H <= 0 or float(H) <= 16 * self.backend.epsilon * abs(
                        float(t))):
                    return finish("step_size_underflow", f"step size underflow at "
                                  f"t={float(t):.6g}: H={float(H):.3g} is at the precision of "
                                  "t; the solution may be singular or stiff there; check the "
                                  "field or loosen rtol.")
            ys.append(y)
            ts.append(t)
            if self.switch is not None and target != times[-1]:
                taken = self.switch(t, y)
                if taken is not None:
                    result = finish("switched", f"switched at t={float(t):.6g}.")
                    result.switch = taken
                    return result
        return finish("success", f"reached t={float(t):.6g} ({stats['accepted']} steps).")
