r"""One validated step: the interval Taylor method in mean-value form (a C⁰ Lohner step, as in
CAPD, with boxes instead of Lohner's rotated parallelepipeds).

**Theorem (the step).** Let :math:`F(t, x)` be analytic, :math:`X` a box of states at
:math:`t_0` with centre :math:`\hat x`, :math:`h > 0`, :math:`T = [t_0, t_0 + h]`, and let
:math:`B` be a box and :math:`J` an interval matrix with :math:`J \ni DF(t, y)` for
:math:`t \in T, y \in B`, such that

.. math:: X + [0, h]\,\big(F(T, \hat x) + J\,(B - \hat x)\big) \subseteq \operatorname{int} B .

Then (1) every solution with :math:`x(t_0) \in X` stays in :math:`B` on :math:`T` (the
right-hand side encloses :math:`F(T, B)` by the mean value theorem, and the Picard operator maps
the continuous paths in :math:`B` into themselves: Schauder); (2) for :math:`s \in [0, h]`,

.. math:: x(t_0 + s) \in \sum_{j<N} c_j(\hat x)\, s^j + c_N(T, B)\, s^N + W(s)\,(x(t_0) - \hat x),

where :math:`c_j(\hat x)` are the Taylor coefficients at :math:`t_0` of the solution through
:math:`\hat x` and :math:`c_N(T, B)` the :math:`N`-th one over every base point in
:math:`T \times B` (ball arithmetic, :func:`verify.enclosure._jets.taylor_coefficients`; Taylor's
theorem with the Lagrange remainder for that solution, which stays in :math:`B`), and
:math:`W(s)` encloses the flow's Jacobian on the segment from :math:`\hat x` to
:math:`x(t_0)` (the mean value theorem for the flow map): :math:`W' = DF\, W`, :math:`W(0) = I`,
so :math:`\|W(s) - I\|_\infty \le e^{Ls} - 1` with :math:`L = \| |J| \|_\infty` (Grönwall) and
:math:`W(h) \in I + h\, J\, W([0, h])` (the integral's average lies in the convex hull). ∎

The mean-value form is what keeps the balls small: the width of the state is multiplied by
:math:`|W(h)| \approx |I + hJ|` per step — the flow's own expansion, entry by entry — instead of
the much larger interval overestimate of :math:`c_j(X)` over the box (the *wrapping effect*). The
Jacobian is in closed form (:mod:`verify.enclosure._jacobian`).

Step sizes are dyadic (8 significant bits, so that times stay exact): the previous one, doubled
at most, halved until the inclusion holds and the remainder :math:`c_N(T, B)\, h^N` is below
``tol`` times the state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, arb_mat, ctx, fmpq

from verify.enclosure._jacobian import jacobian, jacobian_series

__all__ = ["Step", "StepFailure", "taylor_step", "ball_of", "dyadic_ball"]

#: Inclusion attempts (each with a wider box) before ``h`` is halved, and halvings allowed.
_PICARD_ATTEMPTS = 3
_HALVINGS = 40


class StepFailure(Exception):
    """No step could be validated (the reason is the message)."""


def ball_of(value: Fraction) -> arb:
    """A rational number as a ball (exact when dyadic and short enough)."""
    return arb(fmpq(value.numerator, value.denominator))


def dyadic_ball(lo: Fraction, hi: Fraction) -> arb:
    """The ball ``[lo, hi]`` (exact for dyadic ends)."""
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    return ball_of(mid) if rad == 0 else ball_of(mid) + arb(0, ball_of(rad))


def _horner(coefficients: list, s):
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * s + c
    return out


@dataclass
class Step:
    """A validated step from ``t0`` to ``t0 + h`` (module docstring) from the set
    :math:`\\hat x + A r` (``A`` an ``nd × k`` matrix, ``r`` a ``k × 1`` box): the Taylor
    coefficients at the centre (orders ``< N``) and the remainder coefficient ``c_N(T, B)``,
    and the products ``WA_end`` :math:`\ni W(h) A` and ``WA_all`` :math:`\ni W([0, h]) A`;
    ``box`` is :math:`B`."""

    t0: Fraction
    h: Fraction
    coefficients: list
    r: arb_mat
    WA_end: arb_mat
    WA_all: arb_mat
    box: arb_mat
    h_next: Fraction = Fraction(0)  # the step the remainder suggests next

    @property
    def t1(self) -> Fraction:
        return self.t0 + self.h

    def over(self, lo: Fraction, hi: Fraction) -> arb_mat:
        """An enclosure of the state for every time in ``[t0 + lo, t0 + hi]``
        (``0 <= lo <= hi <= h``)."""
        return self._state(dyadic_ball(lo, hi), self.WA_all)

    def centre_end(self) -> arb_mat:
        """The enclosure of the solution through the centre at ``t0 + h``."""
        return _horner(self.coefficients, ball_of(self.h))

    def _state(self, s, WA) -> arb_mat:
        P = _horner(self.coefficients, s)
        spread = (WA * self.r).entries()
        return arb_mat(P.nrows(), P.ncols(), [v + w for v, w in
                                              zip(P.entries(), spread, strict=True)])


def _max_abs(entries) -> float:
    return max((float(abs(v).upper()) for v in entries), default=0.0)


def _dyadic_floor(x: float, bits: int = 8) -> Fraction:
    if not x > 0 or not math.isfinite(x):
        return Fraction(0)
    e = math.floor(math.log2(x)) - bits + 1
    return Fraction(math.floor(x / 2.0 ** e)) * Fraction(2) ** e


def _identity(m: int) -> arb_mat:
    return arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])


def _flow_jacobian(J: arb_mat, low: list, high: list, h: Fraction) -> tuple[arb_mat, arb_mat]:
    """``(W(h), W([0, h]))`` for :math:`W' = DF\\, W`, :math:`W(0) = I`: the Taylor series
    :math:`I + W_1 s + W_2 s^2` with the coefficients :math:`J_0, J_1` of :math:`DF` along the
    solutions from the initial box (``low``), and the Lagrange remainder
    :math:`\\Psi_3(\\tau) W(\\tau) s^3`, where :math:`\\Psi_3` is the third coefficient of
    the fundamental matrix from any base point of the step (``high``: :math:`DF`'s
    coefficients over :math:`T \\times B`) and :math:`W(\\tau) \\in I + [\\pm(e^{L h} - 1)]`
    (Grönwall, :math:`L = \\| |J| \\|_\\infty` with ``J`` :math:`\\ni DF(T, B)`)."""
    m = J.nrows()
    identity = _identity(m)
    L = max(sum((abs(v) for v in row), arb(0)) for row in J.tolist()).upper()
    omega = ((L * ball_of(h)).exp() - 1).upper()
    gronwall = identity + arb_mat(m, m, [arb(0, omega)] * (m * m))
    W1 = low[0]
    W2 = (low[1] + low[0] * W1) * (arb(1) / 2)
    P1 = high[0]
    P2 = (high[1] + high[0] * P1) * (arb(1) / 2)
    rest = (high[2] + high[1] * P1 + high[0] * P2) * (arb(1) / 3) * gronwall
    s_end, s_all = ball_of(h), dyadic_ball(Fraction(0), h)
    return (identity + W1 * s_end + W2 * (s_end * s_end) + rest * (s_end ** 3),
            identity + W1 * s_all + W2 * (s_all * s_all) + rest * (s_all ** 3))


def _growth_guess(sizes: list[float], scale: float) -> float:
    """A step the point coefficients' decay suggests (the root test, halved)."""
    order = len(sizes) - 1
    guesses = [(scale / sizes[j]) ** (1.0 / j) for j in range(max(1, order // 2), order + 1)
               if sizes[j] > 0]
    return 0.5 * min(guesses) if guesses else math.inf


def taylor_step(field, t0: Fraction, centre: arb_mat, A: arb_mat, r: arb_mat,
                h_max: Fraction, *, order: int, tol: float,
                h_hint: Fraction | None = None) -> Step:
    """Validate one step of length at most ``h_max`` from the set ``centre + A r`` at ``t0``
    for the field ``field`` (a :class:`~verify.enclosure._fields.FieldSpec`) with a remainder
    below ``tol`` times the state (module docstring); ``h_hint``: the step to try first (the
    previous step's ``h_next``). Raises :class:`StepFailure`."""
    rows, cols = centre.nrows(), centre.ncols()
    m = rows * cols
    X = centre + arb_mat(rows, cols, (A * r).entries())
    references = field.references(t0, centre)
    point = field.coefficients(t0, centre, order, references)
    low = jacobian_series(field, field.jets(t0, X, 2, references, attention=2), 2)
    sizes = [_max_abs(c.entries()) for c in point]
    scale = max(1.0, sizes[0])
    target = tol * scale
    h = min(h_max, _dyadic_floor(min(_growth_guess(sizes, scale),
                                     float(h_hint) if h_hint else math.inf, 1.0)))
    if h <= 0:
        h = min(h_max, Fraction(1, 1024))
    x_entries, c_entries = X.entries(), centre.entries()
    eps = arb(2) ** (-ctx.prec)
    why = "no step validates"
    for _ in range(_HALVINGS):
        s_range, times = dyadic_ball(Fraction(0), h), dyadic_ball(t0, t0 + h)
        F0 = field.value(times, centre, references).entries()
        guess = _horner(point, s_range).entries()
        box = [(g.union(x) + arb(0, abs(g - x).upper() * arb(0.1) + eps)) for g, x in
               zip(guess, x_entries, strict=True)]
        for _ in range(_PICARD_ATTEMPTS):
            B = arb_mat(rows, cols, box)
            J = jacobian(field, times, B, references)
            shift = (J * arb_mat(m, 1, [b - c for b, c in zip(box, c_entries,
                                                               strict=True)])).entries()
            image = [x + s_range * (f + g) for x, f, g in zip(x_entries, F0, shift,
                                                              strict=True)]
            if all(b.contains_interior(v) for b, v in zip(box, image, strict=True)):
                break
            if not all(v.is_finite() for v in image):
                box = None
                break
            box = [b.union(v) + arb(0, v.rad() + eps) for b, v in zip(box, image, strict=True)]
        else:
            box = None
        if box is None:
            why = f"the a-priori inclusion fails for h = {float(h):.3g}"
            h = _dyadic_floor(float(h) / 2)
            continue
        jets = field.jets(times, B, order, references, attention=3)
        remainder = jets["state"][order]
        size = _max_abs(remainder.entries()) * float(h) ** order
        if not size <= target:
            why = f"the Taylor remainder {size:.3g} exceeds {target:.3g} at h = {float(h):.3g}"
            shrink = 0.8 * (target / size) ** (1.0 / order) if size > 0 and math.isfinite(
                size) else 0.5
            h = _dyadic_floor(float(h) * min(0.5 if shrink != shrink else shrink, 0.9))
            continue
        W_end, W_all = _flow_jacobian(J, low, jacobian_series(field, jets, 3), h)
        grow = min(2.0, 0.9 * (target / size) ** (1.0 / order)) if size > 0 else 2.0
        return Step(t0, h, point[:order] + [remainder], r, W_end * A, W_all * A, B,
                    _dyadic_floor(float(h) * max(grow, 0.5)))
    raise StepFailure(f"no step validates ({why}).")
