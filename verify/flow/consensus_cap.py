r"""Consensus on the sphere, certified: once every token lies in a small cap, the run stops moving.

**Lemma (caps are forward invariant).** Let tokens on the unit sphere follow

.. math:: \dot x_i = P^\perp_{x_i}\Big(\sum_h c_h \sum_j A^h_{ij}(t)\, x_j\Big),
          \qquad P^\perp_x y = y - \langle x, y\rangle x,

with ``V_h = c_h I``, ``c_h ≥ 0``, and any attention weights ``A^h_ij ≥ 0`` (softmax, hardmax,
unnormalised, masked; any ``Q``, ``K``, ``β``). If at ``t_0`` every token lies in the cap
``C = {x : ⟨x, c⟩ ≥ cos r}`` (``|c| = 1``, ``r < π/2``), it does at every ``t ≥ t_0``.

*Proof.* Let ``φ(t) = min_i ⟨x_i(t), c⟩``, attained at ``i``, and ``m_i = Σ_h c_h Σ_j A^h_ij x_j``,
``w = Σ_h c_h Σ_j A^h_ij ≥ 0``. Then ``⟨m_i, c⟩ ≥ φ w`` and ``⟨m_i, x_i⟩ ≤ w`` (``|x_j| = 1``), so
``d/dt ⟨x_i, c⟩ = ⟨m_i, c⟩ − ⟨m_i, x_i⟩ φ ≥ φ w − w φ = 0`` while ``φ ≥ 0``: the lower Dini
derivative of ``φ`` is ``≥ 0`` and ``φ`` never drops below ``φ(t_0) ≥ cos r``. ∎

Two points of such a cap are at most its chord diameter apart; with ``ρ = max_i |x̂_i − c|``
(``x̂ = x/|x|``) the cap ``{|x − c| ≤ ρ}`` contains every token, so from ``t_0`` on

.. math:: |x_i(t) - x_i(t_0)| \le 2ρ \quad\text{for every } i \text{ and every } t \ge t_0 .

A run of such a model (:func:`cap_unavailable` is ``None``) tests this bound after every
accepted step (float64 and arb: it costs ``O(nd)``). Once ``2ρ ≤ CAP_FACTOR · atol`` (the size
of the integrator's own error, which near consensus keeps the tokens jittering at that level),
the run stops integrating and every later checkpoint repeats the state at ``t_0``. The bound is
recorded (``describe()``). With ``e`` the state error at ``t_0`` (the computed tokens ``y_i``
are off the sphere by at most ``e`` too, ``||y_i| − 1| ≤ |y_i − x_i|``), the exact tokens lie
within ``ρ + 2e`` of the centre, so they stay within ``2ρ + 4e`` of where they were, and within
``2ρ + 3e`` of the repeated state. The error estimate needs that bound once:
:func:`verify.flow.simulate.simulate` adds the *reference run's* chord (and a widening) at the
checkpoints after the reference froze, where the distance to the reference no longer sees the
exact motion; the run's own freeze needs nothing added, the reference moving on or repeating
its state (the lemma of ``verify.flow.simulate._cap_bounds``).
On the sphere a long horizon then costs what reaching consensus costs (the explicit integrators
are otherwise held back by stability after it).

>>> import numpy as np
>>> from verify.model import Model
>>> cap_unavailable(Model(V=[[2, 0], [0, 2]], form="x", normalisation="sphere")) is None
True
>>> cap_unavailable(Model(V=[[1, 1], [0, 1]], form="x", normalisation="sphere"))
'V is not a nonnegative multiple of the identity: caps are not known to be invariant.'
>>> x = np.array([[1.0, 0.0], [np.cos(1e-9), np.sin(1e-9)]])
>>> leg = certify_cap(3.0, x, atol=1e-10)
>>> leg.t0, leg.bound < 1.1e-9, bool(np.array_equal(leg.state(50.0), x))
(3.0, True, True)
>>> certify_cap(3.0, np.array([[1.0, 0.0], [0.0, 1.0]]), atol=1e-10) is None
True
"""

from __future__ import annotations

import math

import numpy as np

from verify.exact.checks import identity_multiple
from verify.flow.legs import Certifier, Leg
from verify.numerics import NORMALISED_ULPS, ulps

__all__ = ["cap_unavailable", "cap_bound", "certify_cap", "CapLeg", "CapCertifier", "CAP_FACTOR"]

CAP_FACTOR = 100.0  # freeze once the cap's chord diameter is at most CAP_FACTOR · atol


def cap_unavailable(model) -> str | None:
    """Why the cap certificate does not apply to ``model`` (``None`` when it does): tokens on
    the sphere (``form="x"``, ``normalisation="sphere"``), no MLP, every ``V_h = c_h I`` with
    ``c_h ≥ 0``."""
    if not model.continuous_tokens or not model.on_sphere:
        return "the tokens are not on the sphere (form='x', normalisation='sphere')."
    if model.has_mlp:
        return "an MLP: caps are not known to be invariant."
    for head in model.heads:
        c = identity_multiple(head.V)
        if c is None or c < 0:
            return "V is not a nonnegative multiple of the identity: caps are not known to be " \
                   "invariant."
    return None


def cap_bound(x) -> float:
    """An upper bound of ``2ρ = 2 max_i |x̂_i − ĉ|`` (``ĉ`` the normalised mean of the
    ``x̂_i``): the chord diameter of a cap around every token; ``inf`` when the tokens are not in
    an open hemisphere around ``ĉ``. ``x`` is a float array (the bound adds ``8ε`` for the
    rounding of the normalisations and of the difference) or an ``arb_mat`` (computed in balls,
    the upper end of the ball)."""
    if not isinstance(x, np.ndarray):
        return _cap_bound_arb(x)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    centre = unit.mean(axis=0)
    size = float(np.linalg.norm(centre))
    if not size > 0:
        return math.inf
    rho = float(np.max(np.linalg.norm(unit - centre / size, axis=1))) + ulps(NORMALISED_ULPS)
    return 2 * rho if rho < math.sqrt(2) else math.inf


def _cap_bound_arb(x) -> float:
    from flint import arb

    n, d = x.nrows(), x.ncols()
    rows = [[x[i, a] for a in range(d)] for i in range(n)]
    units = [[v / sum((u * u for u in row), arb(0)).sqrt() for v in row] for row in rows]
    # Any unit-size centre will do, but it must be as precise as the balls: a float64 centre
    # is ~1e-16 off the tokens' mean direction, which put a floor of ~4e-16 under the chord (a
    # 20-digit run never reached CAP_FACTOR·atol). The midpoints' mean, normalised in balls:
    mean = [sum((arb(row[a].mid()) for row in units), arb(0)) / n for a in range(d)]
    size = sum((v * v for v in mean), arb(0)).sqrt()
    if not float(size.lower()) > 0:
        return math.inf
    centre = [v / size for v in mean]
    worst = arb(0)
    for row in units:
        dist = sum(((row[a] - centre[a]) ** 2 for a in range(d)), arb(0)).sqrt()
        worst = max(worst, dist, key=lambda v: float(v.upper()))
    rho = float(worst.upper())
    return 2 * rho if rho < math.sqrt(2) else math.inf


def certify_cap(t, x, atol: float) -> CapLeg | None:
    """The :class:`CapLeg` from ``(t, x)`` when the cap bound is at most ``CAP_FACTOR·atol``."""
    bound = cap_bound(x)
    return CapLeg(t, x, bound) if bound <= CAP_FACTOR * atol else None


class CapLeg(Leg):
    """The rest of a run after :func:`certify_cap`: the state at ``t0`` at every later time,
    exact to within ``bound`` per token (2-norm) by the lemma of the module docstring. A
    :class:`~verify.flow.legs.Leg` whose ``check`` has nothing to test (the lemma holds for all
    time)."""

    def __init__(self, t0, x0, bound: float) -> None:
        self.t0, self.bound = t0, float(bound)
        self.x0 = x0.copy() if isinstance(x0, np.ndarray) else x0
        self.t_last = t0

    def grid(self, checkpoints: list) -> list:
        """Every checkpoint after ``t0``, with its index."""
        return [(t, k) for k, t in enumerate(checkpoints) if t > self.t0]

    def check(self, t) -> bool:
        self.t_last = max(self.t_last, t)
        return True

    def state(self, t):
        return self.x0.copy() if isinstance(self.x0, np.ndarray) else self.x0.mid()

    def describe(self) -> dict:
        return {"kind": "cap", "t0": float(self.t0), "t_end": float(self.t_last),
                "bound": self.bound}


class CapCertifier(Certifier):
    """:func:`certify_cap` as a :class:`~verify.flow.legs.Certifier` (float64 and ``arb`` runs;
    it costs ``O(nd)``, so it is asked after every accepted step)."""

    every_step = True

    def __init__(self, atol: float) -> None:
        self.atol, self.checks = atol, 0

    def certify(self, t, y, *, eigen=None) -> CapLeg | None:
        self.checks += 1
        return certify_cap(t, y, self.atol)
