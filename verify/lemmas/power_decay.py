r"""Lemma ``power-decay``: with :math:`V = -\mu I` the tokens collapse to the origin, with a
certified algebraic bound :math:`\max_i |x_i(t)| \le C (t - t_1 + a)^{-1/2}`.

Source: the theorem of §3 (proved in §8) of Geshkovski–Letrouit–Polyanskiy–Rigollet (arXiv
2305.05465) says :math:`x_i(t) \to 0` for :math:`V = -I`, :math:`Q^\top K = I`; the energy, the
comparison inequality and the explicit constants below are this module's own (proof below), so
that every hypothesis is a finite inequality on the state at one time :math:`t_1`.

**Setting.** The plain model (1.1) in the tokens :math:`x` (one softmax head, full attention, no
normalisation, no MLP): :math:`\dot x_i = -\mu \sum_j P_{ij} x_j`, :math:`P_{ij} =
\operatorname{softmax}_j(s_{ij})`, :math:`s_{ij} = x_i^\top B x_j`, with :math:`\mu > 0` and
:math:`B = \beta Q^\top K` symmetric with :math:`\lambda_{\min}(B) \ge b > 0` (certified by
Gershgorin's discs on the exact :math:`B`). Let :math:`k = \min(n, d)`, :math:`y_i = B^{1/2} x_i`
(so :math:`s_{ij} = \langle y_i, y_j\rangle` and :math:`\dot y_i = -\mu m_i`,
:math:`m_i = \sum_j P_{ij} y_j`), :math:`Z_i = \sum_j e^{s_{ij}}` and the energy

.. math:: L = \sum_{i,j} \big(e^{s_{ij}} - 1\big), \qquad g(r) = e^r - 1 - r.

**Lemma.** Let :math:`L(t_1) \le L_1` and :math:`R > 0` with :math:`g(R) \ge L_1`. Put
:math:`c_1 = \min(1, 2e^{-2R})` and :math:`c = \sqrt 2\,\mu\, c_1^2 / (n \sqrt k\, e^{3R/2})`.
Then for all :math:`t \ge t_1`, with :math:`\Lambda(t) = (L_1^{-1/2} + c(t - t_1)/2)^{-2}`:

.. math::
    L(t) \le \Lambda(t), \qquad \max_i |x_i(t)| \le b^{-1/2} (2\Lambda(t))^{1/4}, \qquad
    \max_{i,j} |P_{ij}(t) - \tfrac1n| \le \tfrac1n\big(e^{2\min(R, \sqrt{2\Lambda(t)})} - 1\big),

so every token tends to 0 at least like :math:`t^{-1/2}` and :math:`P(t) \to \tfrac1n
\mathbf 1\mathbf 1^\top` at least like :math:`t^{-1}`.

*Proof.* (1) :math:`L` is non-increasing: by the symmetry of :math:`s`,
:math:`\dot L = 2\sum_{i,j} e^{s_{ij}}\langle \dot y_i, y_j\rangle = 2\sum_i Z_i \langle \dot
y_i, m_i\rangle = -2\mu \sum_i Z_i |m_i|^2 \le 0`. (2) Write :math:`u = \sum_{ij} s_{ij} =
|\sum_i y_i|^2 \ge 0`; then :math:`L = u + \sum_{ij} g(s_{ij})` with every :math:`g(s_{ij}) \ge
0`, so :math:`g(|y_i|^2) \le L(t) \le L_1 \le g(R)` and :math:`|y_i(t)|^2 \le R` for all
:math:`t \ge t_1` (:math:`g` increases on :math:`[0, \infty)`); hence :math:`|s_{ij}| \le
|y_i||y_j| \le R`. (3) Taylor with the mean value :math:`e^\xi`, :math:`|\xi| \le |s|`:
:math:`e^{-R} s^2/2 \le g(s) \le e^R s^2/2` and :math:`s(e^s - 1) \ge e^{-R} s^2`. With
:math:`v = \sum_{ij} s_{ij}^2`: :math:`L \le u + e^R v/2`, :math:`v \le 2e^R L`, and
:math:`N := \sum_i Z_i\langle y_i, m_i\rangle = \sum_{ij} e^{s_{ij}} s_{ij} \ge u + e^{-R} v
\ge c_1 L`. (4) The Gram matrix :math:`(s_{ij})` is positive semi-definite of rank
:math:`\le k`, so :math:`\sum_i |y_i|^2 \le \sqrt{k v}`, and :math:`Z_i \le n e^R`, so
:math:`D := \sum_i Z_i |y_i|^2 \le n e^R \sqrt{2 k e^R L}`. By Cauchy–Schwarz :math:`N^2 \le D
\sum_i Z_i |m_i|^2`, so :math:`\dot L \le -2\mu N^2/D \le -c L^{3/2}`. (5) While :math:`L > 0`,
:math:`\tfrac{d}{dt} L^{-1/2} = -\tfrac12 L^{-3/2}\dot L \ge c/2`, so :math:`L(t)^{-1/2} \ge
L_1^{-1/2} + c(t - t_1)/2`; once :math:`L = 0` it stays 0. (6) :math:`g(r) \ge r^2/2` gives
:math:`|y_i|^4 \le 2L`, and :math:`|y_i|^2 \ge b |x_i|^2`. Finally :math:`|s_{ij}| \le \rho :=
\min(R, \sqrt{2L})` gives :math:`P_{ij} \in [e^{-2\rho}/n, e^{2\rho}/n]`. ∎

**The bound along the way** (the paper's :math:`|x_i(t)| \le \max(\max_j |x_j(0)|, \sqrt{2n})`,
in the sharper form checked by the fact ``max-norm-bound``): if :math:`B = bI` and :math:`F > 0`
satisfies :math:`bF e^{bF} \ge (n - 1)/e`, then :math:`\max_i |x_i(t)|^2 \le \max(\max_i
|x_i(0)|^2, F)` for all :math:`t \ge 0`. *Proof.* At a token with the largest :math:`r = b|x_i|^2`,
:math:`\tfrac{d}{dt} b|x_i|^2 = -\tfrac{2\mu}{Z_i}\sum_j e^{s_{ij}} s_{ij} \le
-\tfrac{2\mu}{Z_i}(r e^r - \tfrac{n-1}{e})` (:math:`s e^s \ge -1/e`), which is :math:`< 0` when
:math:`r > bF`; so the maximum (whose upper Dini derivative is that of an active token) cannot
rise above :math:`\max(r(0), bF)`. ∎

**Which cases.** Any :math:`\mu > 0` and symmetric :math:`B` with Gershgorin lower bound
:math:`b > 0` (so :math:`B \succ 0`), any :math:`n, d`, any :math:`t_1` (at :math:`t_1 = 0` the
balls are the exact initial tokens: no integration is needed, and a later :math:`t_1` only gives
better constants). Not covered: a :math:`B` that is not positive definite, other :math:`V`, masks,
normalisation, several heads.

Example (two tokens on the line, :math:`V = -1`, :math:`B = 1`):

>>> from fractions import Fraction
>>> from flint import arb_mat
>>> from verify.lemmas._instance import read_instance
>>> inst = read_instance({"instance": {"V": [["-1"]], "Q": [["1"]], "K": [["1"]],
...     "x0": [["1"], ["-1/2"]], "model": {"beta": "1", "form": "x", "attention": "softmax",
...     "mask": "full", "normalisation": "none", "heads": 1}}})
>>> report = check(inst, Fraction(0), arb_mat([[1], [-0.5]]), {"R": "2"})
>>> report.holds, report.conclusions["exponent"]
(True, '1/2')

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb, arb_mat

from verify.lemmas._balls import CheckFailure, LemmaReport, ball_text, exact, parse_ball, rational

__all__ = ["ID", "check", "gershgorin_lower", "radius_for", "bounds_at"]

ID = "power-decay"


def gershgorin_lower(B: list) -> Fraction | None:
    """An exact lower bound of the smallest eigenvalue of the symmetric rational ``B``
    (Gershgorin's discs), or ``None`` when ``B`` is not symmetric."""
    d = len(B)
    if any(B[a][c] != B[c][a] for a in range(d) for c in range(d)):
        return None
    return min(B[a][a] - sum((abs(B[a][c]) for c in range(d) if c != a), Fraction(0))
               for a in range(d))


def _g(r: arb) -> arb:
    return r.exp() - 1 - r


def radius_for(L1: float) -> Fraction:
    """A dyadic ``R`` with ``g(R) = e^R - 1 - R`` a little above ``L1`` (the builder's proposal;
    the check decides)."""
    lo, hi = 0.0, 1.0
    while (arb(hi).exp() - 1 - hi).lower() < L1 * 1.001 + 1e-300:
        hi *= 2
        if hi > 1e6:
            raise CheckFailure(f"L1 = {L1:g} is too large for a radius bound.")
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(_g(arb(mid)).mid()) < L1 * 1.001 + 1e-300 else (lo, mid)
    return Fraction(hi).limit_denominator(2 ** 20) + Fraction(1, 2 ** 20)


def bounds_at(conclusions: dict, t: Fraction) -> dict:
    """The certified bounds at a time ``t >= t1`` from a report's conclusions: ``Lambda``
    (:math:`L(t) \\le \\Lambda`), ``max_norm`` (:math:`\\max_i|x_i(t)| \\le`) and ``P_gap``
    (:math:`\\max|P_{ij} - 1/n| \\le`), as balls whose upper ends are the bounds."""
    t1, n = rational(conclusions["t1"]), int(conclusions["n"])
    L1, c = parse_ball(conclusions["L1"]), parse_ball(conclusions["c"])
    R, b = exact(rational(conclusions["R"])), exact(rational(conclusions["b"]))
    if t < t1:
        raise CheckFailure(f"t = {t} is before t1 = {t1}.")
    Lam = 1 / (1 / L1.sqrt() + c * exact(t - t1) / 2) ** 2 if L1 > 0 else arb(0)
    rho = (2 * Lam).sqrt()
    rho = R if rho.upper() > R.upper() else rho
    return {"Lambda": Lam, "max_norm": (2 * Lam).root(4) / b.sqrt(),
            "P_gap": ((2 * rho).exp() - 1) / n}


def check(inst, t1: Fraction, x: arb_mat, parameters: dict) -> LemmaReport:
    """Check the lemma on the balls ``x`` (the tokens at ``t1``) with ``parameters["R"]`` (a
    rational: the proposed bound of :math:`\\max_i |y_i|^2` for all :math:`t \\ge t_1`)."""
    if inst.plain() or inst.form not in ("x", "z"):
        raise CheckFailure(f"lemma {ID} is about the plain model (1.1) in continuous time; this "
                           f"variant has {', '.join(inst.plain()) or 'form ' + inst.form}.")
    lam = inst.scalar_value()
    if lam is None or not lam < 0:
        raise CheckFailure(f"lemma {ID} needs V = -μI with μ > 0.")
    b = gershgorin_lower(inst.B)
    if b is None:
        raise CheckFailure(f"lemma {ID} needs a symmetric B = βQᵀK.")
    try:
        R = rational(parameters["R"])
    except KeyError:
        raise CheckFailure(f"lemma {ID} needs the parameter R.") from None
    mu, n, d = -lam, inst.n, inst.d
    k = min(n, d)
    report = LemmaReport(ID)
    report.require("B_definite", exact(b), "Gershgorin: λ_min(B) ≥ b > 0 (B symmetric)")
    if not b > 0 or not R > 0:
        report.require("R", exact(R), "R > 0")
        return report
    rows = [[x[i, a] for a in range(d)] for i in range(n)]
    By = [[sum((exact(inst.B[a][c]) * rows[j][c] for c in range(d)), arb(0)) for a in range(d)]
          for j in range(n)]
    L = arb(0)
    for i in range(n):
        for j in range(n):
            s = sum((u * v for u, v in zip(rows[i], By[j], strict=True)), arb(0))
            L += s.exp() - 1
    L1 = arb(L.upper())  # an exact dyadic upper bound of L(t1): the certificate's L1
    Rb = exact(R)
    report.require("R", _g(Rb) - L1, "g(R) = e^R - 1 - R ≥ L1 ≥ L(t1): |y_i(t)|² ≤ R for "
                                     "all t ≥ t1")
    w = 2 * (-2 * Rb).exp()
    c1 = w if w.upper() < 1 else arb(1) if w.lower() >= 1 else arb(w.lower())  # ≤ min(1, w)
    c = arb(2).sqrt() * exact(mu) * c1 ** 2 / (n * arb(k).sqrt() * (3 * Rb / 2).exp())
    c = arb(c.lower())
    report.require("rate", c, "c = √2 μ c1² / (n √k e^{3R/2}) > 0 in dL/dt ≤ -c L^{3/2}")
    report.conclusions = {
        "t1": str(t1), "n": n, "mu": str(mu), "b": str(b), "R": str(R),
        "L1": ball_text(L1), "c": ball_text(c), "exponent": "1/2",
        "bound": "max_i |x_i(t)| <= b^(-1/2) (2 Λ(t))^(1/4), Λ(t) = (L1^(-1/2) + c (t - t1)/2)"
                 "^(-2), for all t >= t1",
        "attention_bound": "max |P_ij(t) - 1/n| <= (exp(2 min(R, sqrt(2 Λ(t)))) - 1)/n"}
    return report
