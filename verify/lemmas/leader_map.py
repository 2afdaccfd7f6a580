r"""Lemma ``leader-map``: a certified hardmax leader map traps the rescaled tokens for all time
(:math:`V = \lambda I`, :math:`\lambda > 0`; any :math:`B = \beta Q^\top K`).

Source: the mechanism of Theorem 3.1 (and of Theorem 2.1 for :math:`d = 1`) of
Geshkovski–Letrouit–Polyanskiy–Rigollet (arXiv 2305.05465); the statement and the explicit
constants below are this module's own (proof below), so that every hypothesis is a finite
inequality on the state at one time :math:`t_1`.

**Setting.** :math:`\dot z_i = \lambda \sum_j P_{ij}(z_j - z_i)`, :math:`P_{ij} =
\operatorname{softmax}_j\big(e^{2\lambda t} z_i^\top B z_j\big)` (the rescaled form (3.1) with
:math:`V = \lambda I`). Some tokens (the set :math:`Z`) are held at :math:`0` for all time by exact
symmetries. The others are split into clusters :math:`C_a` with a *leader* :math:`\ell_a \in C_a`;
:math:`y_j = z_j - z_{\ell_a}` for :math:`j \in C_a`; :math:`m_a = |C_a|`.

**Lemma.** Let :math:`\rho, \Delta > 0` and, at :math:`t_1`, let :math:`R_a` be the box hull of
the balls of :math:`C_a` widened by :math:`\rho + \Delta`, :math:`D` an upper bound of the
diameter of all the balls (and 0), :math:`Y \ge \max |y_j(t_1)|` (Euclidean), and

.. math::
    g_{\rm out} &\le \min\{ z_i^\top B (z_\ell - z_j) : z_i \in R_a,\ z_\ell \in Z_{\ell_a} +
        [\pm\Delta],\ z_j \in R_b \text{ or } z_j = 0 \}, \quad i \in C_a,\ j \notin C_a, \\
    g_{\rm in} &\le \min\{ -z_i^\top B (y_j(t_1) + r) : z_i \in R_a,\ r \in [\pm \rho]^d \},
        \quad i \in C_a,\ j \in C_a \setminus \{\ell_a\},

:math:`U = e^{2\lambda t_1} g_{\rm in}`, :math:`W = e^{2\lambda t_1} g_{\rm out}`. If
:math:`g_{\rm out} > 0`, :math:`g_{\rm in} > 0` and, for every cluster,

.. math::
    \rho_a := 2(m_a - 1)(Y + \rho)\frac{e^{-U}}{U} + (n - m_a) D \frac{e^{-W}}{W} < \rho,
    \qquad
    \Delta_a := (m_a - 1)(Y + \rho)\frac{e^{-U}}{U} + (n - m_a) D \frac{e^{-W}}{2W} < \Delta,

then for all :math:`t \ge t_1` (with :math:`s = t - t_1`): every token of :math:`C_a` stays in
:math:`R_a`; :math:`|z_{\ell_a}(t) - z_{\ell_a}(t_1)| \le \Delta_a`;
:math:`y_j(t) = e^{-\lambda s}(y_j(t_1) + r_j(t))` with :math:`|r_j| \le \rho_a`; every token of
:math:`C_a` converges to one point :math:`p_a` with :math:`|p_a - z_{\ell_a}(t_1)| \le \Delta_a`;
and :math:`1 - P_{i \ell_a}(t) \le (m_a - 1) e^{-U e^{\lambda s}} + (n - m_a) e^{-W e^{2\lambda s}}`
(the attention tends to the Boolean matrix of the leader map, doubly exponentially).

*Proof.* (1) The convex hull of all tokens never grows (at a token maximising
:math:`\langle w, z\rangle`, :math:`\tfrac{d}{dt}\langle w, z_k\rangle = \lambda\sum_j P_{kj}
\langle w, z_j - z_k\rangle \le 0`), so all distances stay :math:`\le D`. (2) Suppose the claims
(tokens in :math:`R_a`, :math:`|r_j| \le \rho`, drift :math:`\le \Delta`) hold on
:math:`[t_1, t^*]`. Then for :math:`i \in C_a`, :math:`j \notin C_a`:
:math:`P_{ij} \le P_{ij}/P_{i\ell} = e^{-(S_{i\ell} - S_{ij})} \le e^{-e^{2\lambda t} g_{\rm out}}`;
for :math:`j \in C_a\setminus\{\ell\}`, :math:`S_{i\ell} - S_{ij} = -e^{2\lambda t} z_i^\top B
y_j = -e^{2\lambda t} e^{-\lambda s} z_i^\top B (y_j(t_1) + r_j) \ge e^{2\lambda t_1}
e^{\lambda s} g_{\rm in}`. So :math:`\sigma^{\rm out}_i = \sum_{j \notin C_a} P_{ij} \le
(n - m_a) e^{-W e^{2\lambda s}}` and :math:`\sigma^{\rm in}_i = \sum_{j \in C_a \setminus \ell}
P_{ij} \le (m_a - 1) e^{-U e^{\lambda s}}`. (3) With :math:`\sum_j P_{ij} = 1`,
:math:`\dot y_i = -\lambda y_i + \lambda \sum_{j \in C_a\setminus\ell}(P_{ij} - P_{\ell j}) y_j
+ \lambda\sum_{j \notin C_a}(P_{ij} - P_{\ell j})(z_j - z_\ell)`, so :math:`q_i = e^{\lambda s}
y_i` has :math:`|\dot q_i| \le \lambda(\sigma^{\rm in}_i + \sigma^{\rm in}_\ell)(Y + \rho) +
\lambda e^{\lambda s}(\sigma^{\rm out}_i + \sigma^{\rm out}_\ell) D`, and
:math:`|\dot z_\ell| \le \lambda \sigma^{\rm in}_\ell (Y + \rho) + \lambda \sigma^{\rm out}_\ell D`.
With :math:`\lambda\int_0^\infty e^{-U e^{\lambda s}} ds = E_1(U) \le e^{-U}/U` and
:math:`\lambda\int_0^\infty e^{\lambda s} e^{-W e^{2\lambda s}} ds \le e^{-W}/(2W)` (and the same
without :math:`e^{\lambda s}`), :math:`|r_i| \le \rho_a < \rho` and the drift is
:math:`\le \Delta_a < \Delta` on :math:`[t_1, t^*]`; the tokens then lie in
:math:`z_\ell(t_1) + [0,1](y_j(t_1) + r_j) + [\pm\Delta] \subseteq R_a`, strictly inside the
bounds assumed, so by continuity they hold beyond :math:`t^*`, hence for all :math:`t`. (4)
:math:`\dot z_\ell` is integrable and :math:`y_j \to 0`. ∎

Consequences used by the claims: the limits :math:`p_a` satisfy :math:`p_a^\top B(p_a - p_b) \ge
g_{\rm out} > 0` for every other limit :math:`p_b` (including the pinned 0), which puts them in
the set :math:`\mathcal S` of Theorem 3.1 when :math:`B \succ 0`; in :math:`d = 1` the order of
the tokens is kept for :math:`t \ge t_1` when the clusters' intervals are ordered and the
offsets :math:`y_j(t_1)` are more than :math:`2\rho` apart.

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb, arb_mat

from verify.lemmas._balls import CheckFailure, LemmaReport, ball_text, exact, parse_ball, rational

__all__ = ["ID", "check", "clusters_of"]

ID = "leader-map"


def clusters_of(leader_of: list, n: int) -> dict[int, list[int]]:
    """``{leader: members}`` from ``leader_of`` (``None`` for a pinned token)."""
    clusters: dict[int, list[int]] = {}
    for i, a in enumerate(leader_of):
        if a is None:
            continue
        if not isinstance(a, int) or not 0 <= a < n:
            raise CheckFailure(f"leader_of[{i}] = {a!r} is not a token index.")
        clusters.setdefault(a, []).append(i)
    for a in clusters:
        if leader_of[a] != a:
            raise CheckFailure(f"token {a} leads others but does not lead itself.")
    return clusters


def _hull(balls: list[list]) -> list[arb]:
    """Per coordinate, the union of the balls."""
    out = list(balls[0])
    for row in balls[1:]:
        out = [u.union(v) for u, v in zip(out, row, strict=True)]
    return out


def _widen(row: list, by: arb) -> list:
    return [v + arb(0, by) for v in row]


def _dot(u: list, B: list[list], v: list) -> arb:
    Bv = [sum((B[a][b] * v[b] for b in range(len(v))), arb(0)) for a in range(len(u))]
    return sum((x * y for x, y in zip(u, Bv, strict=True)), arb(0))


def _norm(v: list) -> arb:
    return sum((x * x for x in v), arb(0)).sqrt()


def check(inst, t1: Fraction, z: arb_mat, pinned: set, parameters: dict) -> LemmaReport:
    """Check the lemma's hypotheses on the balls ``z`` (the rescaled tokens at ``t1``) with
    the certificate's ``parameters`` (``leader_of``, ``rho``, ``delta``; rationals); returns
    the inequalities and the conclusions. Raises :class:`CheckFailure` when the lemma does not
    apply to the instance."""
    report = LemmaReport(ID)
    lam = inst.scalar_value()
    if inst.form != "z" or inst.plain():
        raise CheckFailure(f"lemma {ID} is about the rescaled plain model (form 'z', one softmax "
                           f"head, full attention); this instance has form {inst.form!r} "
                           f"{', '.join(inst.plain())}.")
    if lam is None or lam <= 0:
        raise CheckFailure(f"lemma {ID} needs V = λI with λ > 0.")
    n, d = inst.n, inst.d
    try:
        leader_of = list(parameters["leader_of"])
        rho = exact(rational(parameters["rho"]))
        delta = exact(rational(parameters["delta"]))
    except (KeyError, TypeError):
        raise CheckFailure(f"lemma {ID} needs parameters leader_of, rho, delta.") from None
    if len(leader_of) != n or not rho > 0 or not delta > 0:
        raise CheckFailure("leader_of must name a leader for each token; rho, delta > 0.")
    if {i for i in range(n) if leader_of[i] is None} != set(pinned):
        raise CheckFailure("the tokens without a leader must be exactly those pinned at 0 by "
                           f"the verified symmetries ({sorted(pinned)}).")
    clusters = clusters_of(leader_of, n)
    B = [[exact(v) for v in row] for row in inst.B]
    balls = [[arb(0)] * d if i in pinned else [z[i, a] for a in range(d)] for i in range(n)]
    allow = rho + delta
    regions = {a: _widen(_hull([balls[j] for j in members]), allow)
               for a, members in clusters.items()}
    offsets = {j: [balls[j][c] - balls[a][c] for c in range(d)]
               for a, members in clusters.items() for j in members if j != a}
    everything = _hull(balls)
    D = _norm([arb(v.upper() - v.lower()) for v in everything]).upper()
    Y = max((_norm(y).upper() for y in offsets.values()), default=arb(0))
    scale = (exact(2 * lam * t1)).exp()
    g_out, g_in = None, None
    for a, members in clusters.items():  # z_i ranges over all of R_a: one bound per pair
        leader_box = _widen(balls[a], delta)
        for j in range(n):
            if j in members:
                continue
            zj = [arb(0)] * d if j in pinned else regions[leader_of[j]]
            gap = _dot(regions[a], B, [u - v for u, v in zip(leader_box, zj, strict=True)])
            g_out = gap.lower() if g_out is None else min(g_out, gap.lower())
        for j in members:
            if j == a:
                continue
            gap = -_dot(regions[a], B, _widen(offsets[j], rho))
            g_in = gap.lower() if g_in is None else min(g_in, gap.lower())
    margins = {}
    if g_out is not None:
        margins["g_out"] = report.require(
            "g_out", arb(g_out), "every token prefers its own leader to every token outside its "
            "cluster by a scaled score gap ≥ g_out (over the regions R_a)")
    if g_in is not None:
        margins["g_in"] = report.require(
            "g_in", arb(g_in), "every token prefers its leader to the other members of its "
            "cluster by ≥ g_in e^{-λs} (offsets widened by ρ)")
    if not report.holds:
        report.conclusions = {"t1": str(t1)}
        return report
    U = scale * margins["g_in"] if g_in is not None else None
    W = scale * margins["g_out"] if g_out is not None else None
    tail_in = (-U).exp() / U if U is not None else arb(0)
    tail_out = (-W).exp() / W if W is not None else arb(0)
    rho_need, delta_need = arb(0), arb(0)
    limits, regions_text = {}, {}
    for a, members in clusters.items():
        m = len(members)
        rho_a = 2 * (m - 1) * (Y + rho) * tail_in + (n - m) * D * tail_out
        delta_a = (m - 1) * (Y + rho) * tail_in + (n - m) * D * tail_out / 2
        rho_need = rho_a if rho_a.upper() > rho_need.upper() else rho_need
        delta_need = delta_a if delta_a.upper() > delta_need.upper() else delta_need
        limits[a] = [v + arb(0, delta_a.upper()) for v in balls[a]]
        regions_text[a] = [ball_text(v) for v in regions[a]]
    report.require("rho", rho - rho_need, "the offsets' relative drift bound ρ_a stays below ρ")
    report.require("delta", delta - delta_need, "the leaders' drift bound Δ_a stays below Δ")
    report.conclusions = {
        "t1": str(t1), "lambda": str(lam),
        "leader_of": leader_of, "pinned": sorted(pinned),
        "limits": [None if i in pinned else [ball_text(v) for v in limits[leader_of[i]]]
                   for i in range(n)],
        "regions": {str(a): regions_text[a] for a in clusters},
        "U": ball_text(U) if U is not None else None,
        "W": ball_text(W) if W is not None else None,
        "rho": str(rational(parameters["rho"])), "delta": str(rational(parameters["delta"])),
    }
    report.notes.append(f"{len(clusters)} cluster(s), {len(pinned)} pinned token(s)")
    return report


def limit_balls(conclusions: dict) -> list:
    """The limits certified by :func:`check` as balls (``None`` for a pinned token: 0)."""

    return [None if row is None else [parse_ball(v) for v in row]
            for row in conclusions["limits"]]
