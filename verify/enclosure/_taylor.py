r"""One validated step: the interval Taylor method in mean-value form (a C⁰ Lohner step, as in
CAPD, with boxes instead of Lohner's rotated parallelepipeds).

**Theorem (the step).** Let :math:`F(t, x)` be analytic, :math:`X` a box of states at
:math:`t_0` with centre :math:`\hat x`, :math:`h > 0`, :math:`T = [t_0, t_0 + h]`, let
:math:`c_j(\hat x)` (:math:`j < N`) enclose the Taylor coefficients at :math:`t_0` of the
solution through :math:`\hat x`, :math:`B` a box, :math:`c_N(T, B)` an enclosure of the
:math:`N`-th Taylor coefficient of the solution through every base point in :math:`T \times B`
(ball arithmetic, :func:`verify.enclosure._jets.taylor_coefficients`), and :math:`\mathcal
W \subseteq \mathbb R^{m \times m}` a box that contains the flow's Jacobian :math:`W(s)`,
:math:`s \in [0, h]`, along every solution from :math:`X` that stays in :math:`B` on
:math:`[0, s]` (below). If

.. math:: \sum_{j<N} c_j(\hat x)\,[0, h]^j + c_N(T, B)\,[0, h]^N + \mathcal W\,(X - \hat x)
          \subseteq \operatorname{int} B ,

then (1) every solution with :math:`x(t_0) \in X` exists on :math:`T` and stays in :math:`B`,
and (2) for :math:`s \in [0, h]`,

.. math:: x(t_0 + s) \in \sum_{j<N} c_j(\hat x)\, s^j + c_N(T, B)\, s^N + W(s)\,(x(t_0) - \hat x).

Here :math:`W(s)` encloses the flow's Jacobian on the segment from :math:`\hat x` to
:math:`x(t_0)` (the mean value theorem for the flow map): :math:`W' = DF\, W`, :math:`W(0) = I`,
so :math:`\|W(s) - I\|_\infty \le e^{Ls} - 1` with :math:`L = \| |J| \|_\infty` for any
:math:`J \ni DF(t_0 + s, x(t_0 + s))` along the solutions from :math:`X` (Grönwall), and
:math:`W` is its Taylor polynomial — coefficients at :math:`t_0` over :math:`X` — with the
Lagrange remainder over :math:`T \times B` (:func:`_flow_jacobian`). *Proof.* Let :math:`s^*`
be the supremum of the :math:`s \le h` such that every solution from :math:`X` exists and stays
in :math:`B` on :math:`[0, s]`; :math:`s^* > 0`, since :math:`X \subseteq \operatorname{int} B`
(:math:`s = 0` in the hypothesis) and :math:`X` is compact. On :math:`[0, s^*]` every base
point the terms of (2) use — the centre's solution in Taylor's theorem with the Lagrange
remainder (entrywise, at :math:`(t_0 + \xi, x(t_0 + \xi)) \in T \times B`), the solutions from
the segment in the mean value theorem and in :math:`W`'s Grönwall bound and remainder — lies
in :math:`T \times B`, so (2) holds there and, by the hypothesis, puts every solution in
:math:`\operatorname{int} B` at :math:`s^*`; if :math:`s^* < h`, the solutions would go on
inside :math:`B` beyond it. So :math:`s^* = h`. ∎ (The *high-order enclosure* of Corliss &
Rihm, 1996, and Nedialkov, Jackson & Pryce, 2001, in mean-value form: the initial set's own
Taylor coefficients :math:`c_j(X)` are not needed, only :math:`DF`'s first :math:`k` along it.)

The a-priori box is the centre's Taylor polynomial over :math:`[0, h]` and the initial set's
spread under :math:`W`'s Taylor polynomial: it follows the tokens' common motion through the
step, where the first-order (Picard) form
:math:`X + [0, h]\,(F(T, \hat x) + J\,(B - \hat x)) \subseteq B` needs the Jacobian over the
whole box :math:`B`, which in ball arithmetic loses the tokens' correlation (in a transition
row of attention the scores' widths multiply :math:`E^\top B E`): on hyperplanes'
random-good-triple#0 at :math:`t = 2` its :math:`\| |J| \|_\infty` over :math:`B` was 582, at
the centre 32, and that inclusion alone held the steps to :math:`h \le 2^{-11}`. (Until
session 9 it was the initial set's own polynomial :math:`\sum_{j<N} c_j(X)\,[0, h]^j`: the
same steps and balls on hyperplanes' paper figures, at the cost of the initial set's jets to
order :math:`N - 1` instead of :math:`k - 1` — about a sixth of a step.)

The mean-value form is what keeps the balls small: the width of the state is multiplied by
:math:`|W(h)| \approx |I + hJ|` per step — the flow's own expansion, entry by entry — instead of
the much larger interval overestimate of :math:`c_j(X)` over the box (the *wrapping effect*). The
Jacobian's Taylor coefficients are in closed form (:mod:`verify.enclosure._jacobian`).

Step sizes are dyadic (8 significant bits, so that times stay exact): the previous one, doubled
at most, shrunk until the remainder :math:`c_N(T, B)\, h^N` is below
``tol`` times the state (then the inclusion holds unless :math:`W`'s remainder is large: the
box is the polynomial and the spread widened by four times that and by
:data:`_SPREAD_MARGIN` of the spread).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, arb_mat, fmpq

from verify.enclosure._jacobian import jacobian_series

__all__ = ["Step", "StepFailure", "taylor_step", "ball_of", "dyadic_ball"]

#: Step reductions allowed before a step fails.
_HALVINGS = 40
#: A rejected step is shrunk by at most this factor: far from the accepted size the remainder
#: is no power of h (symmetric-middle's first try, h = 0.55, had 5e207 and the order-12 rule
#: asked for h = 2e-19, and 50 doublings back).
_SHRINK_FLOOR = 1.0 / 16
#: The flow's Jacobian is a Taylor polynomial of this degree with a Lagrange remainder.
_W_ORDER = 3
#: The a-priori box is widened by this much of its radius beyond the accepted remainder.
_RADIUS_ROUNDING = 2.0 ** -16
#: ... and by this much of the initial set's spread beyond W's Taylor polynomial (room for W's
#: Lagrange remainder, of relative size about :math:`\|\Psi_{k+1}\| h^{k+1}`).
_SPREAD_MARGIN = 2.0 ** -4


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
    exponent: float = 0.0  # the remainder's measured growth c_N(T, B) h^N ~ h^p (0: unknown)

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


def _fundamental(J: list, length: int) -> list:
    """The first ``length`` Taylor coefficients of the fundamental matrix :math:`W' = J W`,
    :math:`W(0) = I`, from those of :math:`J`: :math:`W_{m+1} = \\frac{1}{m+1}
    \\sum_{j \\le m} J_j W_{m-j}`."""
    W = [_identity(J[0].nrows())]
    for m in range(length - 1):
        # J_j W_{m-j} with W_0 = I: the product by the identity is not formed
        total = J[0] * W[m] if m else J[0]
        for j in range(1, m + 1):
            total += J[j] * W[m - j] if j < m else J[m]
        W.append(total * (arb(1) / (m + 1)))
    return W


def norm_inf_upper(M: arb_mat) -> arb:
    """An upper bound of :math:`\\|M\\|_\\infty = \\max_i \\sum_j |M_{ij}|` over every matrix in
    the balls of ``M``: the largest of the rows' upper bounds (an exact ``arb``). Python's
    ``max`` over the row sums as balls would not do: ``a > b`` is true for balls only when
    certain, so ``max`` keeps the first of two overlapping balls, whose upper bound may be the
    smaller one.

    >>> from flint import arb, arb_mat
    >>> M = arb_mat([[arb(3.0, 0.02)], [arb(3.04, 0.03)]])
    >>> norm_inf_upper(M) >= 3.07, max(M[0, 0], M[1, 0]).upper() < 3.07
    (True, True)
    """
    return max((sum((abs(v) for v in row), arb(0)).upper() for row in M.tolist()),
               default=arb(0))


def _flow_jacobian(low: list, high: list, h: Fraction,
                   W: list | None = None) -> tuple[arb_mat, arb_mat]:
    """``(W(h), W([0, h]))`` for :math:`W' = DF\\, W`, :math:`W(0) = I`: the Taylor
    polynomial :math:`\\sum_{j \\le k} W_j s^j` from the coefficients :math:`J_0, \\dots,
    J_{k-1}` of :math:`DF` along the solutions from the initial box (``low``, :math:`k` of them),
    and the Lagrange remainder :math:`\\Psi_{k+1}(\\tau) W(\\tau) s^{k+1}`, where
    :math:`\\Psi_{k+1}` is the coefficient of order :math:`k + 1` of the fundamental matrix
    from any base point of the step (``high``: :math:`DF`'s coefficients over
    :math:`T \\times B`, :math:`k + 1` of them) and :math:`W(\\tau) \\in I + [\\pm(e^{L h} -
    1)]` (Grönwall, :math:`L = \\| |J| \\|_\\infty` with :math:`J = \\sum_{j < k} J_j [0, h]^j
    + \\mathrm{high}_k [0, h]^k \\ni DF` along every solution from the initial box: Taylor's
    theorem for :math:`s \\mapsto DF(t_0 + s, x(s))`); ``W``: the polynomial's coefficients
    :math:`W_0, \\dots, W_k` when already computed from ``low``."""
    k = len(low)
    m = low[0].nrows()
    identity = _identity(m)
    s_end, s_all = ball_of(h), dyadic_ball(Fraction(0), h)
    J = _horner(low + [high[k]], s_all)
    L = norm_inf_upper(J)
    omega = ((L * ball_of(h)).exp() - 1).upper()
    gronwall = identity + arb_mat(m, m, [arb(0, omega)] * (m * m))
    W = _fundamental(low, k + 1) if W is None else W
    rest = _fundamental(high, k + 2)[k + 1] * gronwall
    return _horner(W + [rest], s_end), _horner(W + [rest], s_all)


def _growth_guess(sizes: list[float], scale: float) -> float:
    """A step the point coefficients' decay suggests (the root test, halved)."""
    order = len(sizes) - 1
    guesses = [(scale / sizes[j]) ** (1.0 / j) for j in range(max(1, order // 2), order + 1)
               if sizes[j] > 0]
    return 0.5 * min(guesses) if guesses else math.inf


def taylor_step(field, t0: Fraction, centre: arb_mat, A: arb_mat, r: arb_mat,
                h_max: Fraction, *, order: int, tol: float,
                h_hint: Fraction | None = None, exponent: float = 0.0) -> Step:
    """Validate one step of length at most ``h_max`` from the set ``centre + A r`` at ``t0``
    for the field ``field`` (a :class:`~verify.enclosure._fields.FieldSpec`) with a remainder
    below ``tol`` times the state (module docstring); ``h_hint``: the step to try first (the
    previous step's ``h_next``); ``exponent``: the previous step's measured growth of the
    remainder in ``h`` (:attr:`Step.exponent`; the order when 0). Raises :class:`StepFailure`.

    Over the a-priori box the remainder grows much faster than :math:`h^N` (on hyperplanes'
    random-good-triple, :math:`h^{17}` to :math:`h^{50}`: the box widens with :math:`h`), so
    the next step is predicted with the growth measured between a rejected and the accepted
    attempt, which saves the rejected attempt (one jets evaluation over the box) per step."""
    rows, cols = centre.nrows(), centre.ncols()
    offsets = A * r
    X = centre + arb_mat(rows, cols, offsets.entries())
    references = field.references(t0, centre)
    # the centre's orders < N (its order N would only feed the step-size guess)
    point = field.coefficients(t0, centre, order - 1, references)
    # the initial set's jets only to the orders DF's series needs (the a-priori box is the
    # centre's polynomial and the spread under W's polynomial, module docstring)
    initial = field.jets(t0, X, _W_ORDER - 1, references, attention=_W_ORDER)
    low = jacobian_series(field, initial, _W_ORDER)
    spread_polynomial = _fundamental(low, _W_ORDER + 1)
    sizes = [_max_abs(c.entries()) for c in point]
    scale = max(1.0, sizes[0])
    target = tol * scale
    h = min(h_max, _dyadic_floor(min(_growth_guess(sizes, scale),
                                     float(h_hint) if h_hint else math.inf, 1.0)))
    if h <= 0:
        h = min(h_max, Fraction(1, 1024))
    margin = arb(4 * target)
    power = max(float(order), exponent)
    rejected = None  # (h, size) of the last attempt whose remainder was too large
    why = "no step validates"
    for _ in range(_HALVINGS):
        s_range, times = dyadic_ball(Fraction(0), h), dyadic_ball(t0, t0 + h)
        # the a-priori box: the centre's Taylor polynomial over [0, h] and the initial set's
        # spread under W's Taylor polynomial (without its remainder), widened by more than the
        # remainder term that the step accepts, by _SPREAD_MARGIN of the spread (W's remainder)
        # and by more than the rounding of the radii (30 bits in arb)
        polynomial = _horner(point[:order], s_range).entries()
        guess = (_horner(spread_polynomial, s_range) * offsets).entries()
        B = arb_mat(rows, cols, [
            v + w + arb(0, margin + abs(w).upper() * _SPREAD_MARGIN
                        + (v.rad() + w.rad()) * _RADIUS_ROUNDING)
            for v, w in zip(polynomial, guess, strict=True)])
        jets = field.jets(times, B, order, references, attention=_W_ORDER + 1)
        remainder = jets["state"][order]
        size = _max_abs(remainder.entries()) * float(h) ** order
        if not size <= target:
            why = f"the Taylor remainder {size:.3g} exceeds {target:.3g} at h = {float(h):.3g}"
            shrink = 0.8 * (target / size) ** (1.0 / power) if size > 0 and math.isfinite(
                size) else 0.5
            rejected = (float(h), size) if math.isfinite(size) else None
            h = _dyadic_floor(float(h) * min(max(shrink, _SHRINK_FLOOR), 0.9))
            continue
        W_end, W_all = _flow_jacobian(low, jacobian_series(field, jets, _W_ORDER + 1), h,
                                      spread_polynomial)
        if not all(v.is_finite() for v in W_all.entries()):
            why = f"the flow's Jacobian is not finite at h = {float(h):.3g}"
            h = _dyadic_floor(float(h) / 2)
            continue
        WA_all = W_all * A
        tail = (remainder * s_range ** order).entries()
        spread = (WA_all * r).entries()
        if not all(b.contains_interior(p + e + w) for b, p, e, w in zip(
                B.entries(), polynomial, tail, spread, strict=True)):
            why = f"the a-priori inclusion fails for h = {float(h):.3g}"
            h = _dyadic_floor(float(h) / 2)
            continue
        if rejected is not None and 0 < size < rejected[1]:
            power = min(max(math.log(rejected[1] / size) / math.log(rejected[0] / float(h)),
                            float(order)), 4.0 * order)
        grow = min(2.0, 0.9 * (target / size) ** (1.0 / power)) if size > 0 else 2.0
        return Step(t0, h, point[:order] + [remainder], r, W_end * A, WA_all, B,
                    _dyadic_floor(float(h) * max(grow, 0.5)), power)
    raise StepFailure(f"no step validates ({why}).")
