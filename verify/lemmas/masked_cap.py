r"""Lemma ``masked-cap``: on the sphere with :math:`V = cI`, a set of tokens closed under the
mask whose tokens all attend to one token :math:`r` that attends only to itself (the causal
first token) converges to :math:`x_r(0)` once it lies in the open hemisphere around it, at an
explicit exponential rate.

Source: own proof below (the causal case is the open question of the conjecture
``causal-sphere-first-token``, proved here on each instance that reaches the hemisphere; the
argument is the cap invariance of :mod:`verify.lemmas.sphere_consensus` with a fixed centre).

**Setting.** Post-LN tokens (unit vectors) :math:`\dot x_i = c\,P^\perp_{x_i}\big(\sum_{j}
P_{ij} x_j\big)`, :math:`P^\perp_x y = y - \langle x, y\rangle x`, one softmax head with
:math:`V = cI`, :math:`c > 0`, any :math:`B = \beta Q^\top K`, no MLP, and a mask :math:`M`
(causal, or a graph): :math:`P_{ij} = e^{\langle x_i, B x_j\rangle} / \sum_{l: M_{il} = 1}
e^{\langle x_i, B x_l\rangle}` for :math:`M_{ij} = 1`, else 0. Let :math:`r` be a token that
attends only to itself (:math:`M_{rj} = 1` iff :math:`j = r`) and :math:`S \ni r` a set of tokens
closed under the mask (:math:`M_{ij} = 1`, :math:`i \in S \Rightarrow j \in S`) in which every
token attends to :math:`r` (:math:`M_{ir} = 1`). Under a causal mask :math:`r = 1` and every
prefix :math:`S = \{1, \dots, k\}` qualifies.

**Lemma.** Let :math:`m(t) = \min_{i \in S}\langle x_i(t), x_r(0)\rangle` and :math:`m_1 =
m(t_1) > 0`. With :math:`N = \max_{i \in S} |\{j : M_{ij} = 1\}|` and

.. math:: \kappa = \frac{c\,(1 + m_1)}{N}\, e^{-\|B\|_F \sqrt{2 - 2m_1}},

for all :math:`t \ge t_1`: :math:`1 - m(t) \le (1 - m_1)\,e^{-\kappa(t - t_1)}`, so every token
of :math:`S` converges to :math:`x_r(0)`, with :math:`|x_i(t) - x_r(0)|^2 \le 2(1 - m_1)
e^{-\kappa(t - t_1)}`; when :math:`S` is every token, this is consensus at :math:`x_r(0)`.

*Proof.* Token :math:`r` attends only to itself, so :math:`\dot x_r = c P^\perp_{x_r}(x_r) = 0`:
:math:`x_r(t) = x_r(0) =: u` (this is also :mod:`verify.lemmas.masked_token` with
:math:`V = cI`). Let :math:`i \in S` attain :math:`m(t)`, :math:`m \ge 0`. Since :math:`S` is
closed, every :math:`j` with :math:`P_{ij} > 0` is in :math:`S`, and with :math:`|x_j| = 1`

.. math:: \tfrac{d}{dt}\langle x_i, u\rangle = c\sum_j P_{ij}\big(\langle x_j, u\rangle -
          \langle x_i, x_j\rangle\langle x_i, u\rangle\big)
          \ge c P_{ir}(1 - m^2) \ge 0,

each term with :math:`j \ne r` being :math:`\ge m - m = 0` (:math:`\langle x_j, u\rangle \ge m`,
:math:`\langle x_i, x_j\rangle m \le m`) and the term :math:`j = r` equal to :math:`c P_{ir}(1 -
m^2)`. So the lower Dini derivative of :math:`m` is :math:`\ge 0` while :math:`m \ge 0`, and
:math:`m(t) \ge m_1` for all :math:`t \ge t_1` (a continuous function with :math:`D^+ m \ge 0`
on an interval does not decrease there). Then :math:`|x_j - u| = \sqrt{2 - 2\langle x_j,
u\rangle} \le \sqrt{2 - 2m_1}` for every :math:`j \in S`, the scores of row :math:`i` differ from
its score of :math:`r` by :math:`|\langle x_i, B(x_j - u)\rangle| \le \|B\|_F\sqrt{2 - 2m_1}`,
so :math:`P_{ir} \ge e^{-\|B\|_F\sqrt{2 - 2m_1}}/N`, and :math:`D^+(1 - m) \le -c P_{ir}(1 +
m)(1 - m) \le -\kappa(1 - m)`: Grönwall gives the bound. Finally :math:`|x_i - u|^2 = 2(1 -
\langle x_i, u\rangle) \le 2(1 - m)`. ∎

(Compared with :mod:`verify.lemmas.sphere_consensus`, which needs every *pair* of tokens less
than :math:`90°` apart, this needs only every token less than :math:`90°` from :math:`x_r(0)`:
it holds earlier on the same trajectory, and it covers graph masks.)

**Several parts.** Disjoint closed sets :math:`S_1, \dots, S_p`, each with its own root
:math:`r_q` (a graph mask with several hubs), are checked at once: each part is a closed set on
its own, so the lemma applies to each, with its own :math:`m_1` and :math:`\kappa`; every token
of the union converges to its part's root.

**In balls.** The mask conditions are checked exactly on the certificate's mask; :math:`u =
x0_r/|x0_r|` is computed in balls from the exact data (the token never moves); :math:`m_1` is
the lower bound of the balls :math:`\langle x_i(t_1), u\rangle`; at :math:`t_1 = 0` the balls
must contain the exact initial tokens :math:`x0_i/|x0_i|` (so such a certificate rests on no
enclosure at all).

Only python-flint and the standard library are imported.

>>> from flint import arb_mat
>>> from verify.lemmas._instance import read_instance
>>> I = [["1", "0"], ["0", "1"]]
>>> inst = read_instance({"instance": {"V": I, "Q": I, "K": I, "x0": [["1", "0"], ["0", "1"]],
...     "model": {"beta": "1", "form": "x", "attention": "softmax", "mask": "causal",
...               "normalisation": "sphere", "heads": 1}}})
>>> x = arb_mat([[1, 0], [0.6, 0.8]])  # token 2 at 53° from token 1
>>> report = check(inst, Fraction(1), x, {"root": 0, "set": [0, 1]})
>>> report.holds, report.conclusions["set"], report.conclusions["m1"]  # m1 = 0.6 (float)
(True, [0, 1], '5404319552844595*2^-53')
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb, arb_mat

from verify.lemmas._balls import CheckFailure, LemmaReport, ball_text, exact

__all__ = ["ID", "check", "parts_of", "unit_token"]

ID = "masked-cap"


def unit_token(inst, i: int) -> list[arb]:
    """``x0_i / |x0_i|`` in balls (the sphere token at ``t = 0``) at the working precision."""
    norm = sum((exact(v) ** 2 for v in inst.x0[i]), arb(0)).sqrt()
    return [exact(v) / norm for v in inst.x0[i]]


def _part(inst, r, S) -> tuple[int, list[int]]:
    """One part ``(root, set)``, checked exactly against the mask (module docstring)."""
    try:
        r = int(r)
        S = sorted({int(i) for i in S})
    except (TypeError, ValueError):
        raise CheckFailure(f"lemma {ID}: the root and the set must be token indices.") from None
    if not S or S[0] < 0 or S[-1] >= inst.n or r not in S:
        raise CheckFailure(f"lemma {ID}: the set {S} must hold the root {r} and tokens of "
                           f"0..{inst.n - 1}.")
    if inst.mask == "full" or inst.attends(r) != [r]:
        raise CheckFailure(f"lemma {ID}: the root {r} must attend only to itself under the mask.")
    if not inst.closed(S):
        raise CheckFailure(f"lemma {ID}: the set {S} is not closed under the mask (a token of "
                           "it attends outside it).")
    blind = [i for i in S if r not in inst.attends(i)]
    if blind:
        raise CheckFailure(f"lemma {ID}: tokens {blind} of the set do not attend to the root {r}.")
    return r, S


def parts_of(inst, parameters: dict) -> list[tuple[int, list[int]]]:
    """The parts ``(root, set)`` of ``parameters``: ``{"root", "set"}`` (one part) or
    ``{"parts": [{"root", "set"}, ...]}`` (disjoint closed sets, each with its own root: their
    union is closed too), each checked exactly against the mask."""
    if set(parameters) == {"root", "set"}:
        return [_part(inst, parameters["root"], parameters["set"])]
    if set(parameters) != {"parts"} or not isinstance(parameters["parts"], list) or \
            not parameters["parts"] or \
            not all(isinstance(q, dict) and set(q) == {"root", "set"}
                    for q in parameters["parts"]):
        raise CheckFailure(f"lemma {ID} takes the parameters 'root' and 'set', or 'parts' (a "
                           "list of them).")
    parts = [_part(inst, q["root"], q["set"]) for q in parameters["parts"]]
    members = [i for _, S in parts for i in S]
    if len(members) != len(set(members)):
        raise CheckFailure(f"lemma {ID}: the parts' sets overlap.")
    return parts


def check(inst, t1: Fraction, x: arb_mat, parameters: dict) -> LemmaReport:
    """Check the lemma on the balls ``x`` (the unit tokens at ``t1``; only the rows of the set
    are read) with ``parameters`` ``{"root": r, "set": [...]}`` or ``{"parts": [...]}`` of them;
    raises :class:`CheckFailure` when the variant or the mask is not one the lemma is about."""
    if inst.form != "x" or inst.normalisation != "sphere":
        raise CheckFailure(f"lemma {ID} is about tokens on the sphere (form 'x', "
                           "normalisation 'sphere').")
    if inst.heads != 1 or inst.mlp is not None or inst.attention != "softmax":
        raise CheckFailure(f"lemma {ID} needs one softmax head and no MLP.")
    c = inst.scalar_value()
    if c is None or c <= 0:
        raise CheckFailure(f"lemma {ID} needs V = cI with c > 0 (the root never moves).")
    parts = parts_of(inst, parameters)
    d = inst.d
    if t1 == 0:
        for i in (i for _, S in parts for i in S):
            row = [x[i, a] for a in range(d)]
            if not all(b.contains(v) for b, v in zip(row, unit_token(inst, i), strict=True)):
                raise CheckFailure(f"lemma {ID} at t1 = 0: the ball of token {i} does not "
                                   f"contain x0_{i}/|x0_{i}|.")
    report = LemmaReport(ID)
    frobenius = sum((exact(v) ** 2 for row in inst.B for v in row), arb(0)).sqrt()
    found = []
    for r, S in parts:
        name = "" if len(parts) == 1 else f"-{r}"  # one part: the names of the first version
        m1, kappa = _part_bounds(inst, x, r, S, frobenius)
        report.require(f"m1{name}", m1, f"every token of the set {S} has inner product ≥ m1 > 0 "
                                        f"with x_{r + 1}(0) at t1 (tokens numbered from 1)")
        if not m1 > 0:
            continue
        report.require(f"rate{name}", kappa, "the contraction rate κ = c (1 + m1) "
                                             "e^{-|B|_F sqrt(2 - 2 m1)} / N of 1 - min_S "
                                             "<x_i, x_r(0)>")
        found.append({"root": r, "set": S, "m1": ball_text(m1),
                      "kappa": ball_text(kappa.lower())})
    if not report.holds:
        report.conclusions = {"t1": str(t1)}
        return report
    common = {"beta": str(inst.beta),
              "bound": "1 - min_{i in S} <x_i(t), x_r(0)> <= (1 - m1) e^{-κ(t - t1)}",
              "limit": "x_i(t) -> x_r(0) = x0_r/|x0_r| for every i in S"}
    if len(parts) == 1:
        report.conclusions = {"t1": str(t1), **found[0], **common}
    else:
        report.conclusions = {"t1": str(t1), "parts": found, **common}
    return report


def _part_bounds(inst, x: arb_mat, r: int, S: list[int], frobenius: arb) -> tuple[arb, arb]:
    """``m1`` (a lower bound, an exact point) and ``κ`` of one part (module docstring)."""
    u = unit_token(inst, r)
    m1 = arb(1)
    for i in S:
        if i != r:
            inner = sum((x[i, a] * u[a] for a in range(inst.d)), arb(0))
            m1 = min(m1, arb(inner.lower()))
    spread = (2 - 2 * m1).sqrt() if m1.upper() < 1 else arb(0)
    N = max(len(inst.attends(i)) for i in S)
    kappa = exact(inst.scalar_value()) * (1 + m1) * (-(frobenius * spread)).exp() / N
    return m1, kappa
