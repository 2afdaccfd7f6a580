r"""Lemma ``masked-token``: a set of tokens closed under the mask evolves on its own; a token
that attends only to itself (the causal first token, or a graph mask's row with its one 1 on
the diagonal) is a linear flow, and its exact solution decides whether it converges.

Source: own proof below (the observation is the one of the "proved on this instance" issue:
under a causal mask token 1 attends only to itself).

**Setting.** One head, softmax or hardmax attention, no MLP, a mask :math:`M` (token :math:`i`
attends to the :math:`j` with :math:`M_{ij} = 1`), in continuous time: the plain model
:math:`\dot x_i = \sum_j P_{ij} V x_j` (read in :math:`x` or in the rescaled
:math:`z = e^{-tV}x`) or post-LN tokens on the sphere, :math:`\dot x_i = P^\perp_{x_i}
(\sum_j P_{ij} V x_j)` with :math:`P^\perp_x y = y - \langle x, y\rangle x`.

**Lemma.** (a) If a set :math:`S` of tokens is closed under the mask (no token of :math:`S`
attends outside :math:`S`), the tokens of :math:`S` solve the same equation with the other
tokens deleted: their rows of :math:`P` are normalised over :math:`S` alone. (b) For
:math:`S = \{k\}` (token :math:`k` sees only itself: :math:`M_{kj} = 1` iff :math:`j = k`; under
a causal mask :math:`k = 1`) :math:`P_{kk} \equiv 1`, so with :math:`v = x_k(0)`

.. math:: x_k(t) = e^{tV} v,\qquad z_k(t) = v,\qquad
          x_k(t) = \frac{e^{tV} v}{|e^{tV} v|}\ \text{(sphere)}

for all :math:`t \ge 0`, whatever :math:`\beta, Q, K` and the other tokens. (c) Let :math:`p` be
the local minimal polynomial of :math:`v` (the monic :math:`p` of least degree with
:math:`p(V) v = 0`, from the exact Krylov sequence :math:`v, Vv, \dots`). Then

* :math:`x_k(t) = e^{tV}v` converges iff every root of :math:`p` has negative real part, except
  a simple root 0; a root with positive real part makes it **grow**, a non-real root on the
  imaginary axis makes it **turn** forever, a double root 0 makes it **drift**; it is **fixed**
  iff :math:`p = \lambda` (or :math:`v = 0`);
* the direction :math:`e^{tV}v / |e^{tV}v|` (the token on the sphere, or the variable
  ``direction``) is **fixed** iff :math:`\deg p = 1`; it **converges** when one real root has
  a larger real part than every other root; it **turns** forever (no limit) when every root of
  largest real part is non-real.

*Proof.* (a) A row :math:`i \in S` of the attention only involves tokens of :math:`S`, so the
equations of :math:`S` are closed; uniqueness of solutions (the field is locally Lipschitz)
makes the solution of the smaller system the restriction of the full one. (b) With :math:`S =
\{k\}`, :math:`\dot x_k = V x_k` (plain) and :math:`\dot z_k = e^{-tV}(V x_k - V x_k) = 0`.
On the sphere, :math:`y = e^{tV}v` and :math:`u = y/|y|` give :math:`\dot u = Vu - \langle u,
Vu\rangle u = P^\perp_u(Vu)`, the same equation from the same point. (c) Write :math:`e^{tV}v =
\sum_\lambda e^{\lambda t} q_\lambda(t)` over the roots of :math:`p`, :math:`q_\lambda` a vector
polynomial of degree one less than the multiplicity of :math:`\lambda` in :math:`p`, nonzero
(:math:`p` is minimal). The statements on :math:`x_1` follow term by term (a nonzero
trigonometric polynomial without constant term has mean 0 and is not constant, so it has no
limit). For the direction, let :math:`a` be the largest real part and :math:`k` the largest
multiplicity among the roots with real part :math:`a`: :math:`e^{tV}v = t^{k-1}e^{at}(f(t) +
o(1))` with :math:`f(t) = \sum e^{i\omega t} c_\omega` over those roots :math:`a + i\omega`,
:math:`f \ne 0`. If one real root dominates, :math:`f` is a constant vector and the direction
tends to :math:`f/|f|`. If every such root is non-real, :math:`f` is a real trigonometric
polynomial without constant term; if the direction tended to :math:`u`, recurrence of the
almost periodic :math:`f` (for every :math:`s` there are :math:`\tau_k \to \infty` with
:math:`f(s + \tau_k) \to f(s)`) would give :math:`f(s) = |f(s)| u` for every :math:`s`, so
:math:`\langle f, u\rangle = |f| \ge 0` with mean 0, and :math:`f = 0`: a contradiction. ∎

**In balls.** :math:`p` is computed exactly over :math:`\mathbb Q` from the certificate's exact
:math:`V` and :math:`x_1(0)`, factored over :math:`\mathbb Q` (FLINT); the real part of a root
of a linear or quadratic factor is an exact rational, a root of a higher factor is isolated in
an Arb box (its realness certified by Arb). Each sign the conclusion needs is an inequality
with a margin; a sign that the boxes do not decide gives no conclusion ("undecided"). Nothing
is read off a run or an enclosure: the certificate's state is the exact initial data
(:math:`t_1 = 0`), so the checker re-derives everything, the mask included (a graph mask is
written in the certificate; the parameter ``token`` names :math:`k`, default the first).

Only python-flint and the standard library are imported.

>>> from types import SimpleNamespace
>>> from fractions import Fraction as F
>>> rotation = SimpleNamespace(V=[[F(1), F(-1)], [F(1), F(1)]], x0=[[F(1), F(0)], [F(0), F(1)]],
...     form="x", attention="softmax", mask="causal", normalisation="sphere", heads=1, mlp=None,
...     n=2, d=2, attends=lambda i: list(range(i + 1)))
>>> report = check(rotation, {})
>>> report.holds, report.conclusions["behaviour"]["x"], report.conclusions["roots"]["x"]
(True, 'turns', '1 + i*sqrt(1)')
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from flint import arb, fmpq, fmpq_poly

from verify.lemmas._balls import CheckFailure, LemmaReport, exact

__all__ = ["ID", "check", "masked_token_of", "behaviours", "local_minimal_polynomial",
           "classify"]

ID = "masked-token"
NO_LIMIT = ("grows", "turns", "drifts")


def _apply(V: list, v: list) -> list:
    return [sum((V[a][b] * v[b] for b in range(len(v))), Fraction(0)) for a in range(len(V))]


def _solve(columns: list, target: list) -> list | None:
    """``c`` with ``sum_j c_j columns[j] = target`` (exact; ``None`` if not in the span)."""
    rows = [[col[a] for col in columns] + [target[a]] for a in range(len(target))]
    k, pivots, r = len(columns), [], 0
    for c in range(k):
        pivot = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        rows[r] = [x / rows[r][c] for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[r], strict=True)]
        pivots.append(c)
        r += 1
    if any(row[k] != 0 for row in rows[r:]):
        return None
    out = [Fraction(0)] * k
    for i, c in enumerate(pivots):
        out[c] = rows[i][k]
    return out


def local_minimal_polynomial(V: list, v: list) -> list[Fraction]:
    """The coefficients ``[a_0, ..., a_{k-1}, 1]`` of the monic :math:`p` of least degree with
    :math:`p(V) v = 0` (exact; ``[1]`` for ``v = 0``).

    >>> local_minimal_polynomial([[0, -1], [1, 0]], [1, 0])
    [Fraction(1, 1), Fraction(0, 1), Fraction(1, 1)]
    """
    V = [[Fraction(x) for x in row] for row in V]
    krylov = [[Fraction(x) for x in v]]
    if not any(krylov[0]):
        return [Fraction(1)]
    while True:
        nxt = _apply(V, krylov[-1])
        c = _solve(krylov, nxt)
        if c is not None:
            return [-x for x in c] + [Fraction(1)]
        krylov.append(nxt)


@dataclass(frozen=True)
class Root:
    """A root of ``p``: its real part (exact when ``re_exact`` is set, else the ball ``re``),
    whether it is real (``real``: True, False, or None when undecided), its multiplicity."""

    re: arb
    re_exact: Fraction | None
    real: bool | None
    multiplicity: int
    text: str

    def sign(self) -> int | None:
        """The sign of the real part (``None`` when the ball contains 0 and it is not exact)."""
        if self.re_exact is not None:
            return (self.re_exact > 0) - (self.re_exact < 0)
        return 1 if self.re > 0 else -1 if self.re < 0 else None

    def bounds(self) -> tuple[arb, arb]:
        return (self.re.lower(), self.re.upper()) if self.re_exact is None else (self.re, self.re)


def _roots(coefficients: list[Fraction]) -> list[Root]:
    """The roots of ``p`` (module docstring, "In balls")."""
    p = fmpq_poly([fmpq(c.numerator, c.denominator) for c in coefficients])
    out = []
    for factor, mult in p.factor()[1]:
        c = [Fraction(int(x.p), int(x.q)) for x in factor.coeffs()]
        c = [x / c[-1] for x in c]  # monic
        if len(c) == 2:  # λ + c0
            r = -c[0]
            out.append(Root(exact(r), r, True, mult, str(r)))
        elif len(c) == 3 and c[1] ** 2 - 4 * c[0] < 0:  # a non-real pair, real part -c1/2
            re, square = -c[1] / 2, (4 * c[0] - c[1] ** 2) / 4
            for s in ("+", "-"):
                out.append(Root(exact(re), re, False, mult, f"{re} {s} i*sqrt({square})"))
        else:
            for root, _ in factor.complex_roots():
                real = True if root.imag == 0 else False if not root.imag.contains(0) else None
                out.append(Root(root.real, None, real, mult, str(root)))
    return out


def classify(V: list, v: list) -> dict:
    """What the exact solution does (lemma (c)): ``{"x": ..., "direction": ..., "root": ...,
    "margin": arb, ...}`` with behaviours ``fixed``, ``converges``, ``grows``, ``turns``,
    ``drifts`` or ``undecided``; ``x_root`` and ``direction_root`` witness a behaviour without
    limit, ``margin`` and ``direction_margin`` are the positive numbers that decide them (1
    for an exact decision).

    >>> classify([[0, -1], [1, 0]], [1, 0])["x"]
    'turns'
    >>> classify([[-1, 0], [0, -2]], [1, 1])["x"], classify([[-1, 0], [0, -2]], [1, 1])["direction"]
    ('converges', 'converges')
    """
    coefficients = local_minimal_polynomial(V, v)
    degree = len(coefficients) - 1
    out = {"polynomial": [str(c) for c in coefficients], "margin": arb(1)}
    if degree == 0:
        return {**out, "x": "fixed", "direction": "undecided"}
    roots = _roots(coefficients)
    out["x"] = _x_behaviour(roots, coefficients, out)
    out["direction"] = "fixed" if degree == 1 else _direction(roots, out)
    return out


def _x_behaviour(roots: list[Root], coefficients: list, out: dict) -> str:
    if coefficients == [Fraction(0), Fraction(1)]:
        return "fixed"
    found = None
    for r in roots:
        sign = r.sign()
        if sign is None or (sign == 0 and r.real is None):
            return "undecided"
        if sign > 0:
            out.update(x_root=r.text, margin=r.re if r.re_exact is not None else r.re.lower())
            return "grows"
        if sign == 0 and r.real is False:
            found = found or ("turns", r)
        elif sign == 0 and r.multiplicity > 1:
            found = found or ("drifts", r)
    if found:
        out["x_root"] = found[1].text
        return found[0]
    return "converges"


def _direction(roots: list[Root], out: dict) -> str:
    top = roots[0].bounds()[0]
    for r in roots:  # the largest lower bound of a real part (exact points: decided)
        if r.bounds()[0] > top:
            top = r.bounds()[0]
    candidates = [r for r in roots if not r.bounds()[1] < top]
    others = [r for r in roots if r.bounds()[1] < top]
    gap = min((top - r.bounds()[1] for r in others), default=arb(1))
    if all(r.real is False for r in candidates):
        out["direction_root"] = candidates[0].text
        out["direction_margin"] = gap
        return "turns"
    if len(candidates) == 1 and candidates[0].real is True:
        out["direction_margin"] = gap
        return "converges"
    return "undecided"


def masked_token_of(inst, parameters: dict) -> int:
    """The token the lemma is about: ``parameters["token"]`` (default 0, the causal first
    token), checked to attend only to itself under the instance's mask."""
    if set(parameters) - {"token"}:
        raise CheckFailure(f"lemma {ID} takes one parameter, the token.")
    try:
        k = int(parameters.get("token", 0))
    except (TypeError, ValueError):
        raise CheckFailure(f"lemma {ID}: the token must be an integer.") from None
    if inst.mask == "full" or not 0 <= k < inst.n or inst.attends(k) != [k]:
        raise CheckFailure(f"lemma {ID} needs a token that attends only to itself (the causal "
                           f"first token, or a graph mask's row with its one 1 on the "
                           f"diagonal); token {k} does not under the mask {inst.mask!r}.")
    return k


def behaviours(inst, found: dict) -> dict:
    """The behaviour of a token that attends only to itself in each variable, from its
    :func:`classify` (``x`` on the sphere is the direction; ``z`` of the plain model is fixed)."""
    sphere = inst.normalisation == "sphere"
    out = {"x": found["direction"] if sphere else found["x"], "direction": found["direction"]}
    if not sphere:
        out["z"] = "fixed"
    return out


def check(inst, parameters: dict) -> LemmaReport:
    """The lemma for the token ``parameters["token"]`` of ``inst`` (default 0: the causal first
    token; exact data): raises :class:`CheckFailure` when the variant is not one the lemma is
    about or the token attends to another token."""
    k = masked_token_of(inst, parameters)
    if inst.heads != 1 or inst.mlp is not None or inst.attention not in ("softmax", "hardmax"):
        raise CheckFailure(f"lemma {ID} needs one softmax or hardmax head and no MLP (then "
                           "P_kk = 1).")
    if inst.form not in ("x", "z") or inst.normalisation not in ("none", "sphere") or (
            inst.normalisation == "sphere" and inst.form != "x"):
        raise CheckFailure(f"lemma {ID} is about continuous time, plain or on the sphere.")
    sphere = inst.normalisation == "sphere"
    found = classify(inst.V, inst.x0[k])
    behaviour = behaviours(inst, found)
    report = LemmaReport(ID)
    decided = [b for b in behaviour.values() if b != "undecided"]
    report.require("decided", arb(1) if decided else arb(-1),
                   f"the closed form of token {k + 1} decides its behaviour in some variable")
    if not sphere and behaviour["x"] in NO_LIMIT:
        report.require("x-no-limit", found["margin"],
                       "a root of the local minimal polynomial keeps e^{tV}v from converging "
                       "(Re > 0: its real part; on the imaginary axis, or a double 0: decided "
                       "in rationals, margin 1)")
    if behaviour["direction"] in ("turns", "converges"):
        report.require("direction-dominant", found["direction_margin"],
                       "the roots of largest real part are above all others (1 when every "
                       "root shares it)")
    x = f"x_{k + 1}"
    report.conclusions = {
        "t1": "0", "token": k, "closed_set": [k],
        "solution": (f"{x}(t) = e^{{tV}} {x}(0) / |e^{{tV}} {x}(0)|" if sphere else
                     f"{x}(t) = e^{{tV}} {x}(0), z_{k + 1}(t) = {x}(0)"),
        "local_minimal_polynomial": found["polynomial"], "behaviour": behaviour,
        "roots": {"x": found.get("direction_root" if sphere else "x_root"),
                  "direction": found.get("direction_root")}}
    return report
