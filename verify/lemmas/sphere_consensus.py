r"""Lemma ``sphere-consensus``: on the sphere with :math:`V = cI`, once every pair of tokens is
less than :math:`90°` apart the tokens reach consensus, at an explicit exponential rate.

Source: own proof below; it refines the cap invariance of :mod:`verify.flow.consensus_cap` (caps are
forward invariant for :math:`V = cI`, :math:`c \ge 0`) and is the sphere analogue of the
contraction argument of Geshkovski–Letrouit–Polyanskiy–Rigollet's follow-up work on the sphere
(tokens in an open hemisphere reach consensus).

**Setting.** Unit vectors :math:`x_i` with :math:`\dot x_i = P^\perp_{x_i}\big(\sum_j W_{ij}
x_j\big)`, :math:`P^\perp_x y = y - \langle x, y\rangle x`, where :math:`W_{ij} = \sum_h c_h
A^h_{ij} \ge 0` (post-LN, :math:`V_h = c_h I`, softmax or unnormalised attention
:math:`A^h_{ij} = \operatorname{softmax}_j(\beta\, x_i^\top B_h x_j)` or
:math:`\tfrac1n e^{\beta x_i^\top B_h x_j}`, full attention, or a causal mask: token
:math:`i` attends to the :math:`j \le i`, the softmax normalised over them).

**Lemma.** Let :math:`m(t) = \min_{i \ne k}\langle x_i, x_k\rangle` and :math:`m_1 = m(t_1) > 0`.
Let :math:`a > 0` bound every :math:`W_{ij}` from below on configurations with all pairwise
inner products :math:`\ge m_1`: for softmax :math:`a = \sum_h c_h e^{-\beta \|B_h\|_F
\sqrt{2 - 2m_1}}/n`, unnormalised :math:`a = \sum_h c_h e^{-\beta\|B_h\|_F}/n`. Then for all
:math:`t \ge t_1`

.. math:: 1 - m(t) \le (1 - m_1)\, e^{-\kappa (t - t_1)}, \qquad \kappa = 2 a m_1
          \ \text{(full attention)},\quad \kappa = a m_1\ \text{(causal mask)},

so every pairwise distance :math:`|x_i - x_k| = \sqrt{2 - 2\langle x_i, x_k\rangle}` tends to 0
exponentially, and all tokens converge to one point: consensus.

*Proof.* Let :math:`(i, k)` attain :math:`m(t)`. Using :math:`|x_j| = 1`,
:math:`\langle \dot x_i, x_k\rangle = \sum_j W_{ij}\big(\langle x_j, x_k\rangle - \langle x_i,
x_j\rangle\langle x_i, x_k\rangle\big) \ge \sum_j W_{ij}\, m (1 - \langle x_i, x_j\rangle) \ge
W_{ik}\, m(1 - m)` while :math:`m \ge 0` (each term: :math:`\langle x_j, x_k\rangle \ge m` and
:math:`\langle x_i, x_j\rangle m \le m`). With the same for :math:`\langle x_i, \dot x_k\rangle`,
the lower Dini derivative of :math:`m` is :math:`\ge 0` while :math:`m \ge 0`, so
:math:`m(t) \ge m_1` for all :math:`t \ge t_1`; then all pairwise distances are
:math:`\le \sqrt{2 - 2m_1}`, the score differences in a row are :math:`\le \beta\|B_h\|_F
\sqrt{2 - 2m_1}`, :math:`W_{ik} \ge a`, and :math:`D^+(1 - m) \le -2 a m_1 (1 - m)`. Under a
causal mask only the later token of the pair attends to the earlier one (:math:`W_{ki} \ge a`
for :math:`i < k`, :math:`W_{ik} = 0`; every other term above is still :math:`\ge 0`, and a
softmax row over :math:`j \le k` has at most :math:`n` terms): :math:`D^+(1 - m) \le -a m_1
(1 - m)`. Then token 1 attends only to itself and, with :math:`V = cI`, never moves
(:math:`P^\perp_{x_1}(c x_1) = 0`): the common limit is :math:`x_1(0)`. Finally
:math:`|\dot x_i| \le \sum_j W_{ij} |x_j - \langle x_i, x_j\rangle x_i| \le w \sqrt{2(1 - m)}`
(:math:`w` the largest row sum of :math:`W`) is integrable, so each :math:`x_i` converges, and
the limits coincide. ∎

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb, arb_mat

from verify.lemmas._balls import CheckFailure, LemmaReport, ball_text, exact

__all__ = ["ID", "check"]

ID = "sphere-consensus"


def check(inst, t1: Fraction, x: arb_mat, parameters: dict) -> LemmaReport:
    """Check the lemma on the balls ``x`` (unit tokens at ``t1``); ``parameters`` holds the
    value scalars ``c`` of each head's ``V = cI`` and its ``B`` (``heads``), as the
    certificate states them (checked against the instance)."""
    if inst.form != "x" or inst.normalisation != "sphere":
        raise CheckFailure(f"lemma {ID} is about tokens on the sphere (form 'x', "
                           "normalisation 'sphere').")
    if inst.mask not in ("full", "causal") or inst.mlp is not None or \
            inst.attention not in ("softmax", "unnormalised"):
        raise CheckFailure(f"lemma {ID} needs softmax or unnormalised attention, full or "
                           "causal, no MLP.")
    lam = inst.scalar_value()
    if inst.heads != 1 or lam is None or lam <= 0:
        raise CheckFailure(f"lemma {ID} is checked here for one head with V = cI, c > 0.")
    report = LemmaReport(ID)
    n, d = inst.n, inst.d
    rows = [[x[i, a] for a in range(d)] for i in range(n)]
    m1 = None
    for i in range(n):
        for k in range(i + 1, n):
            inner = sum((u * v for u, v in zip(rows[i], rows[k], strict=True)), arb(0))
            m1 = inner.lower() if m1 is None else min(m1, inner.lower())
    if m1 is None:  # one token: consensus trivially
        m1 = arb(1)
    m1 = arb(m1)
    report.require("m1", m1, "every pair of tokens has inner product ≥ m1 > 0 at t1")
    if not report.holds:
        report.conclusions = {"t1": str(t1)}
        return report
    frobenius = sum((exact(v) ** 2 for row in inst.B for v in row), arb(0)).sqrt()
    # inst.B = βQᵀK: a row's scores differ by at most ‖B‖_F |x_l - x_j|
    spread = (2 - 2 * m1).sqrt() if m1.upper() < 1 else arb(0)
    if inst.attention == "softmax":
        a = exact(lam) * (-(frobenius * spread)).exp() / n
    else:
        a = exact(lam) * (-frobenius).exp() / n
    pairs = 2 if inst.mask == "full" else 1  # how many of W_ik, W_ki are >= a
    kappa = pairs * a * m1
    report.require("rate", kappa, f"the contraction rate κ = {pairs} a m1 of "
                                  "1 - min <x_i, x_k>")
    report.conclusions = {"t1": str(t1), "m1": ball_text(m1), "kappa": ball_text(kappa.lower()),
                          "weight_lower_bound": ball_text(a.lower()), "beta": str(inst.beta),
                          **({"mask": inst.mask} if inst.mask != "full" else {}),
                          "bound": "1 - min_{i≠k} <x_i(t), x_k(t)> <= (1 - m1) e^{-κ(t - t1)}"}
    return report
