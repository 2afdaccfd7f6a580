r"""Certified hardmax continuation: the exact flow of the rescaled field once the attention is 0/1.

In the rescaled form (3.1) the scores are ``S_ij = e^{L} S̃_ij`` with ``L = 2 μ t`` and
``S̃_ij = <Ẽ(t) z_i, B Ẽ(t) z_j>`` (:mod:`verify.flow.exponential`). When, for every row ``i``,

.. math:: e^{L}\,\big(\tilde S_{i l(i)} - \max_{j \ne l(i)} \tilde S_{ij} - r_{ij}\big) \ge 746,

with ``r_ij`` a bound on the error of the two scores, the float64 softmax weights are exactly 0
and 1 (``e^{-746}`` underflows): the float64 field *is* the linear field
``ż_i = V z_{l(i)} − V z_i``. If the leader map ``l`` is idempotent (``l(l(i)) = l(i)``: leaders
follow themselves, so they do not move), this field has the closed form

.. math:: z_i(t) = z_{l(i)} + e^{-(t - t_0) V}\,(z_i(t_0) - z_{l(i)}),\qquad
          x_i(t) = e^{tV} z_{l(i)} + e^{t_0 V}(z_i(t_0) - z_{l(i)}).

:class:`HardmaxLeg` evaluates it, with the scores in a cancellation-free form: writing
``s = e^{-μ(t - t_0)}``, ``a_i(t) = Ẽ(t) z_{l(i)}`` and ``c_i = Ẽ(t_0)(z_i(t_0) − z_{l(i)})``
(constant), ``Ẽ(t) z_i(t) = a_i(t) + s c_i`` and the gaps are

.. math:: \tilde S_{i l(i)} - \tilde S_{ij} = \big\langle a_i + s c_i,\;
          B\,\big((a_{l(i)} - a_{l(j)}) - s c_j\big)\big\rangle,

where ``a_{l(i)} − a_{l(j)}`` is exactly 0 for two followers of the same leader: no difference
of two large nearly equal numbers is ever formed, even when ``z`` has diverging coordinates along
negative eigen-directions of ``V``. The leg is checked on a grid (every checkpoint and
:data:`CHECKS_PER_UNIT` points per unit time); at the first grid time where a margin closes the
run falls back to integration from the last time that passed
(:func:`verify.flow.simulate.simulate`).

The state error used in the bound is ``δ = STATE_SAFETY·(rtol·max|z| + atol)`` per entry (an
a-priori figure: the integrator's local tolerance, with a safety factor); the leg also records
the largest state error with which every one of its checks would still have passed
(:meth:`HardmaxLeg.tolerated_error`). ``simulate`` checks the state error a posteriori against
the reference run — the distance seen must be at most ``δ``, or at most the tolerated error
divided by the estimate's safety factor ``κ`` — and, when the reference contradicts it, makes
the run again without the continuation (or, if that fails, sets the error after the switch to
``inf``): nothing after a switch whose assumption failed is certified.

Examples
--------
>>> import numpy as np
>>> from verify.model import Model
>>> from verify.numerics import Float64
>>> from verify.flow.fields import VectorField
>>> field = VectorField(Model(V=[[1, 0], [0, 1]]), 3, Float64())
>>> cert = HardmaxCertifier(field, rtol=1e-10, atol=1e-12)
>>> z = np.array([[2.0, 0.0], [0.0, 2.0], [1.9, 0.1]])
>>> cert.certify(1.0, z) is None               # e^2 · gap is far below 746 at t = 1
True
>>> leg = cert.certify(5.0, z)
>>> leg.leaders.tolist()
[0, 1, 0]
>>> np.round(leg.state(6.0)[2], 6)           # z_3 → z_1 like e^{-(t - 5)}
array([1.963212, 0.036788])
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.exact.inputs import as_float_array
from verify.flow.legs import Certifier, Leg, ScoredLeg
from verify.numerics import DIFFERENCE_ULPS, ulps

__all__ = ["HardmaxCertifier", "HardmaxLeg", "ArbHardmaxCertifier", "ArbHardmaxLeg", "certify_arb",
           "log_arb_threshold", "check_grid", "continuation_unavailable", "LOG_HARDMAX",
           "STATE_SAFETY", "CHECKS_PER_UNIT"]

LOG_HARDMAX = math.log(746.0)  # e^{-746} underflows to 0 in float64
STATE_SAFETY = 100.0  # a-priori state error: STATE_SAFETY·(rtol·max|z| + atol) per entry
CHECKS_PER_UNIT = 20  # leader-map checks per unit time after the switch ...
MAX_CHECKS = 4000  # ... but no more than this many per leg (the grid coarsens on long legs)


def continuation_unavailable(model) -> str | None:
    """Why the hardmax continuation does not apply to ``model`` (``None`` when it does): it
    needs the rescaled continuous form with one softmax head and no MLP.

    >>> from verify.model import Model
    >>> continuation_unavailable(Model(V=[[1]])) is None
    True
    >>> continuation_unavailable(Model(V=[[1]], form="x"))
    "form='x': the continuation works on the rescaled tokens z (form='z')."
    """
    if not model.rescaled:
        return f"form={model.form!r}: the continuation works on the rescaled tokens z (form='z')."
    if not model.single_head or model.has_mlp or model.normalised:
        return "several heads, an MLP or a normalisation: the hardmax field is not linear."
    if not model.softmax:
        return f"attention={model.attention!r}: only softmax attention is continued."
    return None


class HardmaxCertifier(Certifier):
    """Decides, at a state ``(t, z)`` of a float64 run, whether the hardmax is certified, and
    then returns the :class:`HardmaxLeg` that continues it (a
    :class:`~verify.flow.legs.Certifier`).

    Parameters
    ----------
    field : VectorField
        The float64 field of the run (its exponential, bilinear form and mask are reused).
    rtol, atol : float
        Tolerances of the run (they size the a-priori state error).
    """

    def __init__(self, field, rtol: float, atol: float) -> None:
        model = field.model
        self.exponential = field.exponential
        self.mu = float(self.exponential.mu)
        self.B = field._heads[0][1]                               # β QᵀK in float64
        self.B_norm = float(np.linalg.norm(self.B, 2))
        self.mask = field.mask
        self.rtol, self.atol = rtol, atol
        self.model = model
        self.checks = 0

    def state_error(self, z: np.ndarray) -> float:
        """A-priori 2-norm bound of the error of one row of ``z``."""
        entry = STATE_SAFETY * (self.rtol * float(np.max(np.abs(z))) + self.atol)
        return math.sqrt(z.shape[1]) * entry

    def certify(self, t: float, y: np.ndarray, *, eigen=None) -> HardmaxLeg | None:
        """The leg starting at ``(t, z)`` (``z = y``) if every row's hardmax is certified there
        and the leader map is idempotent; else ``None``. Costs about one evaluation of the field.
        A run in eigen-coordinates passes ``y = w`` and its
        :class:`~verify.flow.fields.EigenRescaledField` as ``eigen``: the quick test then needs
        no ``Ẽ(t)`` and no change of basis."""
        self.checks += 1
        z, w = (None, y) if eigen is not None else (y, None)
        if eigen is not None:
            S, L = eigen.scores(t, w)
        else:
            E, growth = self.exponential.scaled_float(t)
            L = 2.0 * growth
            Y = z @ E.T
            S = Y @ self.B @ Y.T
        if self.mask is not None:
            S = np.where(self.mask, S, -np.inf)
        if S.shape[1] < 2:
            return None
        top2 = -np.partition(-S, 1, axis=1)[:, :2]
        gap = float(np.min(top2[:, 0] - top2[:, 1]))
        if not gap > 0 or L + math.log(gap) < LOG_HARDMAX:  # cheap: not even uncertified-close
            return None
        if z is None:
            z = eigen.to_z(w)
        leaders = np.argmax(S, axis=1)
        if not np.all(leaders[leaders] == leaders):
            return None
        leg = HardmaxLeg(self, t, z, leaders, self.state_error(z))
        return leg if leg.check(t) else None


class HardmaxLeg(ScoredLeg):
    """The closed-form flow from ``(t0, z0)`` under the leader map ``leaders`` (see the module
    docstring), with a state error ``delta`` (2-norm per row) at ``t0``: a
    :class:`~verify.flow.legs.ScoredLeg` (its scores, margins and ``x`` are cancellation-free)."""

    def __init__(self, certifier: HardmaxCertifier, t0: float, z0: np.ndarray,
                 leaders: np.ndarray, delta: float) -> None:
        self.c, self.t0, self.delta = certifier, float(t0), delta
        self.leaders = np.asarray(leaders)
        self.heads = np.unique(self.leaders)                      # the distinct leaders
        self.slot = np.searchsorted(self.heads, self.leaders)     # row → index in heads
        self.z_lead = z0[self.heads].copy()                       # fixed for t ≥ t0
        self.D0 = z0 - z0[self.leaders]                           # z_i(t0) − z_{l(i)}
        E0, _ = certifier.exponential.scaled_float(self.t0)
        self.C = self.D0 @ E0.T                                   # c_i = Ẽ(t0) D_i
        self.E0_norm = self._norm(E0)
        self.worst = math.inf           # smallest log scaled margin seen on the checks
        self.checked = 0
        self.t_last = self.t0           # last time the check passed
        self.tolerated = math.inf       # the largest state error every passed check allows
        self._error_parts = None        # (R₀, R₁, R₂) of the last gaps(): see tolerated_error

    def _norm(self, E: np.ndarray) -> float:
        """A bound on ``‖Ẽ(t)‖_2`` (exactly 1 for symmetric ``V``: ``e^{(λ_k − μ)t} ≤ 1``)."""
        if self.c.exponential.kind == "symmetric":
            return 1.0
        return _norm_bound(E)

    # -- the closed form ---------------------------------------------------------------------
    def _exp(self, tau: float) -> np.ndarray:
        """``e^{τ V}`` in float64 (eigen-decomposition when diagonalisable, else ``expm``)."""
        exponential = self.c.exponential
        lam, P, Pinv, blocks = exponential._float
        if blocks is None:
            with np.errstate(over="ignore"):
                M = (P * np.exp(lam * tau)) @ Pinv
            return M if exponential.kind == "symmetric" else M.real
        from scipy.linalg import expm

        return expm(tau * as_float_array(self.c.model.V))

    def state(self, t: float) -> np.ndarray:
        """``z(t) = z_{l(i)} + e^{-(t − t0)V} (z_i(t0) − z_{l(i)})``."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self.z_lead[self.slot] + self.D0 @ self._exp(self.t0 - t).T

    def x_state(self, t: float) -> np.ndarray:
        """``x(t) = e^{tV} z_{l(i)} + e^{t0 V}(z_i(t0) − z_{l(i)})`` (no cancellation)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self.z_lead[self.slot] @ self._exp(t).T + self.D0 @ self._exp(self.t0).T

    def _parts(self, t: float):
        E, growth = self.c.exponential.scaled_float(t)
        s = math.exp(-self.c.mu * (t - self.t0))
        A = self.z_lead @ E.T                                     # a for each leader
        Y = A[self.slot] + s * self.C                             # Ẽ(t) z_i(t)
        return E, 2.0 * growth, s, A, Y

    def scores(self, t: float) -> tuple[np.ndarray, float]:
        """``(S̃, L)`` at ``t`` from the cancellation-free ``Ẽ(t) z_i(t) = a_i + s c_i``."""
        _, L, _, _, Y = self._parts(t)
        return Y @ self.c.B @ Y.T, L

    def gaps(self, t: float) -> tuple[np.ndarray, np.ndarray, float]:
        """``(G, R, L)``: ``G_ij = S̃_{i l(i)} − S̃_ij`` (``+inf`` at ``j = l(i)`` and where
        masked), a bound ``R_ij`` on its error, and ``L``."""
        E, L, s, A, Y = self._parts(t)
        n = Y.shape[0]
        B, Bn = self.c.B, self.c.B_norm
        G = np.empty((n, n))
        R = np.empty((n, n))
        parts = np.empty((3, n, n))  # R = R₀ + R₁ + R₂: rounding, linear and quadratic in δ
        E_norm = self._norm(E)
        # Propagated state error (δ on z_lead, 2δ on D0) and float64 rounding. For two
        # followers of one leader a_{l(i)} − a_{l(j)} is exactly 0 in the flow too: only the
        # error of s·c_j enters, and it decays with s like the gap itself.
        e_y = self.delta * (E_norm + 2 * s * self.E0_norm)
        e_same = 2 * self.delta * s * self.E0_norm
        e_other = e_same + 2 * self.delta * E_norm
        y_norm = np.linalg.norm(Y, axis=1)
        d = Y.shape[1]
        for a in range(len(self.heads)):
            rows = np.flatnonzero(self.slot == a)
            other = self.slot != a
            diff = (A[a] - A[self.slot]) - s * self.C              # a_{l(i)} − a_{l(j)} − s c_j
            G[rows] = (Y[rows] @ B) @ diff.T
            diff_norm = np.linalg.norm(diff, axis=1)
            e_d = np.where(other, e_other, e_same)
            rounding = ulps(DIFFERENCE_ULPS * d, diff_norm + other * np.linalg.norm(A[a]))
            linear = e_y * diff_norm[None, :] + y_norm[rows, None] * e_d[None, :]
            quadratic = e_y * e_d[None, :]
            R[rows] = Bn * (linear + quadratic) + Bn * y_norm[rows, None] * rounding[None, :]
            parts[0, rows] = Bn * y_norm[rows, None] * rounding[None, :]
            parts[1, rows] = Bn * linear
            parts[2, rows] = Bn * quadratic
            G[rows, self.heads[a]] = np.inf
        if self.c.mask is not None:
            G = np.where(self.c.mask, G, np.inf)
        self._error_parts = parts
        return G, R, L

    def margins(self, t: float) -> np.ndarray:
        """Per row, ``min_j G_ij`` (``inf`` for a row with a single allowed entry)."""
        G, _, _ = self.gaps(t)
        return G.min(axis=1)

    def check(self, t: float) -> bool:
        """Is the leader map still certified at ``t``? (Every ``e^L (G_ij − R_ij) ≥ 746``.)"""
        G, R, L = self.gaps(t)
        self.checked += 1
        worst = float(np.min(G - R)) if G.size else math.inf
        log_margin = L + math.log(worst) if worst > 0 else -math.inf
        if not np.isfinite(worst):
            log_margin = math.inf if worst == math.inf else -math.inf
        self.worst = min(self.worst, log_margin)
        ok = log_margin >= LOG_HARDMAX
        if ok:
            self.t_last = max(self.t_last, float(t))
            self.tolerated = min(self.tolerated, self.tolerated_error(G, L))
        return ok

    def tolerated_error(self, G: np.ndarray, L: float) -> float:
        r"""The largest state error ``δ'`` (2-norm per row at ``t0``, like ``delta``) with which
        the check whose gaps ``G`` were just computed still passes.

        The error bound is ``R(δ') = R₀ + x R₁ + x² R₂`` with ``x = δ'/δ`` (``R₀`` the rounding,
        ``R₁`` and ``R₂`` its parts linear and quadratic in the state error, at ``δ``); the check
        needs ``G_ij − R_ij ≥ 746 e^{-L}`` for every pair, so with ``c = G − R₀ − 746 e^{-L}``

        .. math:: x^* = \min_{ij} \frac{2 c_{ij}}{R_{1,ij} + \sqrt{R_{1,ij}^2 + 4 R_{2,ij} c_{ij}}}.

        :func:`verify.flow.simulate.simulate` confirms a switch against the reference run with
        it when the a-priori ``delta`` is exceeded (the certificate never needed that little).
        """
        R0, R1, R2 = self._error_parts
        finite = np.isfinite(G)
        if not np.any(finite):
            return math.inf
        with np.errstate(over="ignore"):
            room = G[finite] - R0[finite] - math.exp(LOG_HARDMAX - L)
        room = np.maximum(room, 0.0)
        x = 2 * room / (R1[finite] + np.sqrt(R1[finite] ** 2 + 4 * R2[finite] * room))
        return float(self.delta * np.min(x))

    def grid(self, checkpoints: list[float]) -> list[tuple[float, int | None]]:
        """Check times after ``t0`` (:func:`check_grid`)."""
        return check_grid(self.t0, checkpoints)

    def describe(self) -> dict:
        return {"kind": "hardmax", "t0": self.t0, "t_end": self.t_last,
                "leaders": sorted(int(v) for v in self.heads),
                "leader_of": [int(v) for v in self.leaders],
                "checks": self.checked, "min_log_scaled_margin": float(self.worst),
                "state_error_assumed": self.delta,
                "state_error_tolerated": self.tolerated if math.isfinite(self.tolerated)
                else None}


def check_grid(t0, checkpoints: list) -> list:
    """Check times after ``t0``: every checkpoint (with its index in ``checkpoints``) and a
    uniform grid of :data:`CHECKS_PER_UNIT` per unit time (at most :data:`MAX_CHECKS`), in the
    type of the times given (floats, or ``Fraction`` for exact arb runs).

    >>> times = [Fraction(0), Fraction(1, 10), Fraction(1, 5)]
    >>> [(str(t), k) for t, k in check_grid(Fraction(0), times)]
    [('1/20', None), ('1/10', 1), ('1/10', None), ('3/20', None), ('1/5', 2)]
    """
    later = [(t, k) for k, t in enumerate(checkpoints) if t > t0]
    if not later:
        return []
    end = later[-1][0]
    count = min(MAX_CHECKS, math.ceil((end - t0) * CHECKS_PER_UNIT))
    extra = [(t0 + (end - t0) * m / count, None) for m in range(1, count)]
    return sorted(later + extra, key=lambda item: (item[0], item[1] is None))


def _norm_bound(M: np.ndarray) -> float:
    """``‖M‖_2 ≤ sqrt(‖M‖_1 ‖M‖_∞)`` (cheap)."""
    A = np.abs(M)
    return math.sqrt(float(A.sum(axis=0).max()) * float(A.sum(axis=1).max()))


# ---------------------------------------------------------------------------------------------
# The same continuation in arb balls.
def log_arb_threshold(bits: int, n: int) -> float:
    """``log`` of the scaled margin above which the softmax weights of an ``arb`` run are below
    its working precision: ``e^L G ≥ bits·ln 2 + ln n + 50`` makes every non-leader weight at
    most ``2^{-bits} e^{-50} / n`` (an ``arb`` softmax never rounds to exactly 0, so the
    continuation replaces a field that differs from the hardmax one by less than that)."""
    return math.log(bits * math.log(2.0) + math.log(max(n, 2)) + 50.0)


def certify_arb(field, t, z, rtol: float, atol: float):
    """The :class:`ArbHardmaxLeg` starting at ``(t, z)`` of an ``arb`` run (``field`` its
    :class:`~verify.flow.fields.VectorField`, ``z`` an ``arb_mat``), or ``None``: the leaders are
    read off the midpoint scores, the leader map must be idempotent and every gap, computed in
    balls from the state widened by the a-priori error ``STATE_SAFETY·(rtol·max|z| + atol)``,
    must pass :func:`log_arb_threshold`."""
    backend = field.backend
    n = z.nrows()
    S, L = field.scores(backend.scalar(t), z)
    scores = backend.to_float(S)
    if field.mask is not None:
        scores = np.where(field.mask, scores, -np.inf)
    if n < 2:
        return None
    top2 = -np.partition(-scores, 1, axis=1)[:, :2]
    gap = float(np.min(top2[:, 0] - top2[:, 1]))
    log_L = float(L.mid()) if not isinstance(L, int) else float(L)
    if not gap > 0 or log_L + math.log(gap) < log_arb_threshold(backend.bits, n):
        return None
    leaders = np.argmax(scores, axis=1)
    if not np.all(leaders[leaders] == leaders):
        return None
    size = float(np.max(np.abs(backend.to_float(z))))
    leg = ArbHardmaxLeg(field, t, z, leaders, STATE_SAFETY * (rtol * size + atol))
    return leg if leg.check(t) else None


class ArbHardmaxCertifier(Certifier):
    """:func:`certify_arb` as a :class:`~verify.flow.legs.Certifier` of an ``arb`` run (``field``
    its :class:`~verify.flow.fields.VectorField`; ``rtol``, ``atol`` size the a-priori state
    error). A test forms the scores in balls: asked at checkpoints only (``every_step`` false)."""

    every_step = False

    def __init__(self, field, rtol: float, atol: float) -> None:
        self.field, self.rtol, self.atol, self.checks = field, rtol, atol, 0

    def certify(self, t, y, *, eigen=None) -> ArbHardmaxLeg | None:
        self.checks += 1
        return certify_arb(self.field, t, y, self.rtol, self.atol)


class ArbHardmaxLeg(Leg):
    """:class:`HardmaxLeg` in ``arb`` balls: the closed form
    ``z_i(t) = z_{l(i)} + e^{-(t − t0)V}(z_i(t0) − z_{l(i)})`` and its leader-map check.

    The state at ``t0`` enters as balls of radius ``delta`` (the a-priori integration error per
    entry), so every score gap is an enclosure: the check passes only if each gap's lower bound,
    scaled by ``e^L``, clears :func:`log_arb_threshold`. The gaps use the cancellation-free form
    of the module docstring (``a_{l(i)} − a_{l(j)}`` is not formed for two followers of one
    leader: it is exactly 0), so the balls stay tight when ``z`` has diverging coordinates.
    Times are exact (``Fraction``), as in the ``arb`` integrator.
    """

    def __init__(self, field, t0, z0, leaders, delta: float) -> None:
        from flint import arb, arb_mat

        self.field, self.t0, self.delta = field, Fraction(t0), delta
        self.bits = field.backend.bits
        self.leaders = [int(v) for v in leaders]
        self.heads = sorted(set(self.leaders))
        n, d = z0.nrows(), z0.ncols()
        self.n, self.d = n, d
        z0 = z0.mid()
        ball = arb(0, delta)
        # z_{l} (with the state error) and D_i = z_i(t0) − z_{l(i)} (exactly 0 for a leader)
        self.z_heads = arb_mat(len(self.heads), d, [z0[a, c] + ball for a in self.heads
                                                    for c in range(d)])
        self.slot = [self.heads.index(v) for v in self.leaders]
        self.D0 = arb_mat(n, d, [0 if i == self.leaders[i] else
                                 z0[i, c] - z0[self.leaders[i], c] + 2 * ball
                                 for i in range(n) for c in range(d)])
        E0, self.g0 = field.exponential.scaled_arb(field.backend.scalar(self.t0), self.bits)
        self.C = self.D0 * E0.transpose()                     # c_i = Ẽ(t0) D_i
        self.checked, self.worst, self.t_last = 0, math.inf, self.t0

    def state(self, t):
        """``z(t)`` as an ``arb_mat`` of midpoints, like the integrator's states (the radii of
        the state error are for the checks: through the ``e^L``-scaled softmax they would
        swamp the recorded attention)."""
        from flint import arb_mat

        E, growth = self.field.exponential.scaled_arb(
            self.field.backend.scalar(self.t0 - Fraction(t)), self.bits)
        M = E * growth.exp()                                  # e^{-(t − t0)V}
        lead = arb_mat(self.n, self.d, [self.z_heads[self.slot[i], c] for i in range(self.n)
                                        for c in range(self.d)])
        return (lead + self.D0 * M.transpose()).mid()

    def check(self, t) -> bool:
        """Is every gap ``S̃_{i l(i)} − S̃_ij`` certified positive with ``e^L`` times its lower
        bound above :func:`log_arb_threshold` at ``t``?"""
        from flint import arb_mat

        t = Fraction(t)
        E, growth = self.field.exponential.scaled_arb(self.field.backend.scalar(t), self.bits)
        s = (self.g0 - growth).exp()                          # e^{-μ(t − t0)}
        A = self.z_heads * E.transpose()                      # a for each leader
        sC = self.C * s
        n, d, B = self.n, self.d, self.field._heads[0][1]
        Y = arb_mat(n, d, [A[self.slot[i], c] + sC[i, c] for i in range(n) for c in range(d)])
        mask = self.field.mask
        lows = []  # lower bounds of every gap S̃_{i l(i)} − S̃_ij
        for a, head in enumerate(self.heads):
            rows = [i for i in range(n) if self.slot[i] == a]
            diff = arb_mat(n, d, [(0 if self.slot[j] == a else A[a, c] - A[self.slot[j], c])
                                  - sC[j, c] for j in range(n) for c in range(d)])
            G = arb_mat(len(rows), d, [Y[i, c] for i in rows for c in range(d)]) * B \
                * diff.transpose()
            lows += [float(G[r, j].lower()) for r, i in enumerate(rows) for j in range(n)
                     if j != head and (mask is None or mask[i, j])]
        lowest = min(lows, default=math.inf)  # a positive bound rounded to 0.0 fails: safe
        self.checked += 1
        if lowest == math.inf:
            log_margin = math.inf
        else:
            log_margin = float(2 * growth.mid()) + math.log(lowest) if lowest > 0 else -math.inf
        self.worst = min(self.worst, log_margin)
        ok = log_margin >= log_arb_threshold(self.bits, n)
        if ok:
            self.t_last = max(self.t_last, t)
        return ok

    def grid(self, checkpoints: list) -> list:
        """Exact check times after ``t0`` (:func:`check_grid` on ``Fraction`` times)."""
        return check_grid(self.t0, [Fraction(t) for t in checkpoints])

    def describe(self) -> dict:
        return {"kind": "hardmax", "t0": float(self.t0), "t_end": float(self.t_last),
                "leaders": self.heads, "leader_of": list(self.leaders),
                "checks": self.checked, "min_log_scaled_margin": float(self.worst),
                "state_error_assumed": self.delta * math.sqrt(self.d), "backend": "arb"}
