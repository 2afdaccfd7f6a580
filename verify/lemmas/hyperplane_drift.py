r"""Lemma ``hyperplane-drift``: inside a trapped side of a good triple the followers attend to
one leader for all :math:`t \ge t_1`, and their rescaled offsets to it are an explicit linear
flow — which certifies that a follower **drifts along its hyperplane forever** (non-convergence
of :math:`z_i(t)`), or that the side converges to one point.

Source: Definition 4.1 and Theorem 4.2 of Geshkovski–Letrouit–Polyanskiy–Rigollet (arXiv
2305.05465): the theorem says every :math:`\varphi_1^*(z_i(t))` converges (the hyperplanes
:math:`\{\varphi_1^* \in \{a, 0, b\}\}`) and that "the other coordinates of :math:`z` need not
converge"; the statement below, its constants and its proof are this module's own, built on the
trapping lemma :mod:`verify.lemmas.good_triple` (whose notation it uses), so that every
hypothesis is a finite inequality on the balls at one time :math:`t_1`.

**Setting.** The rescaled plain model :math:`\dot z_i = \sum_j P_{ij} V(z_j - z_i)`,
:math:`x_i = e^{tV} z_i` (so :math:`\dot x_i = \sum_j P_{ij} V x_j`), :math:`P_{ij} =
\operatorname{softmax}_j(x_i^\top B x_j)`, a good triple with :math:`\lambda_1, \varphi_1,
\varphi_1^*, c = \varphi_1^\top B\varphi_1 > 0`, and the good-triple lemma holding at
:math:`t_1` (its sides :math:`T_\pm`, bounds :math:`\mu_\pm`, :math:`G_\pm`, :math:`U_0`,
:math:`\hat a_\ell`, :math:`\rho`, :math:`T`, :math:`\delta`). Write :math:`\sigma = \pm 1` for
the side, :math:`C = T_\sigma` (:math:`m = |C| \ge 2`), a *leader* :math:`\ell \in C`, the
offsets **in the token variable** :math:`c_k = x_k - x_\ell` (:math:`k \in C`) and
:math:`s = t - t_1`.

**Lemma.** Let :math:`r > 0`, let :math:`R_k` be the ball of :math:`c_k(t_1)` widened by
:math:`r` (:math:`R_\ell = \{0\}`), :math:`Y \ge \max_k |c_k(t_1)|`, :math:`D = e^{\lambda_1
t_1}\delta|\varphi_1| + 2\|T\|_2 U_0`, :math:`\|V\|_2 \le N_V`, and for :math:`k \in C
\setminus \{\ell\}`

.. math:: U = \min_k \Big( e^{\lambda_1 t_1}\mu_\sigma \min_{R_k}(-\sigma\varphi_1^\top B c)
          - \hat a_\ell \max_{R_k}|T^\top B c| - \max_{i \in C}\max_{R_i \times R_k}|c_i^\top
          B c|
          \Big).

If :math:`U > 0` and

.. math:: r_C := N_V\Big(2(m - 1)(Y + r)\frac{e^{-U}}{\lambda_1 U} + (n - m) D
          \frac{e^{-G_\sigma}}{\lambda_1 G_\sigma}\Big) < r

(the terms with :math:`G_\sigma` are 0 when the side holds every token, :math:`m = n`: the
good-triple lemma then needs no :math:`G_\sigma`), then for all :math:`t \ge t_1`:
:math:`|c_k(t) - c_k(t_1)| \le r_C`; every token of :math:`C` puts weight :math:`\ge 1 -
(m-1)e^{-U e^{\lambda_1 s}} - (n - m)e^{-G_\sigma e^{2\lambda_1 s}}` on :math:`\ell` (Boolean
attention to the leader); :math:`c_k(t) \to c_k^\infty`;
:math:`z_\ell(t)` converges; and :math:`z_k(t) - z_\ell(t) = e^{-tV} c_k(t)`. Hence, for a left
eigenvector :math:`\psi^*` of :math:`V` with eigenvalue :math:`\mu`:

* **drift** — if :math:`\operatorname{Re}\mu < 0` and :math:`\eta = |\psi^*(c_k(t_1))| -
  |\psi^*|\,r > 0`, then :math:`|\psi^*(z_k(t) - z_\ell(t))| \ge \eta\, e^{|\operatorname{Re}
  \mu| t}` for all :math:`t \ge t_1`: follower :math:`k` is unbounded (:math:`|z_k(t)| \to
  \infty`) while :math:`\varphi_1^*(z_k(t))` converges — it drifts along its hyperplane of
  Theorem 4.2 forever, and **not every token converges**;
* **converges** — if every eigenvalue of :math:`V` has positive real part, except perhaps a
  simple eigenvalue 0: :math:`e^{-tV}c_k(t) \to \Pi_0 c_k^\infty` (:math:`\Pi_0` the spectral
  projection of the eigenvalue 0; without it the limit is 0): every token of the side
  converges — to the leader's limit when 0 is not an eigenvalue (``kernel`` absent), to
  :math:`\lim z_\ell + \Pi_0 c_k^\infty` when it is;
* **turns** — if no follower drifts, :math:`\mu = i\omega` with :math:`\omega \ne 0` (on the
  imaginary axis, decided exactly below) and :math:`\eta = |\psi^*(c_k(t_1))| - |\psi^*|\,r >
  0`, then :math:`|\psi^*(z_k(t) - z_\ell(t))| \ge \eta` for all :math:`t \ge t_1` while
  :math:`e^{i\omega t}\psi^*(z_k(t) - z_\ell(t))` converges to a limit of modulus
  :math:`\ge \eta`: follower :math:`k` turns about its leader forever and has **no limit**.

Otherwise (no follower with a certified component along an eigenvalue of negative real part or
of one on the imaginary axis other than 0, and not the case of convergence) the behaviour is
*undecided* and nothing is claimed beyond the Boolean attention.

**The imaginary axis, exactly.** In balls the real part of an eigenvalue on the imaginary axis
is a ball around 0, which decides no sign. Over :math:`\mathbb Q`: write the characteristic
polynomial of the exact :math:`V` as :math:`p(x) = a(x^2) + x\,b(x^2)`; for real :math:`\omega`,
:math:`p(i\omega) = a(-\omega^2) + i\omega\, b(-\omega^2)` with :math:`a, b` real, so the
eigenvalues on the imaginary axis are 0 when :math:`p(0) = 0` and :math:`\pm i\sqrt{-y}` for
the real roots :math:`y < 0` of :math:`q = \gcd(a, b)`. :math:`q` is computed and factored
over :math:`\mathbb Q` (FLINT); a linear factor gives :math:`y` exactly, a higher one its real
roots in Arb boxes whose realness and sign Arb certifies (a sign it does not decide gives no
root: *undecided*). Such a root :math:`\nu` is the eigenvalue :math:`\mu_j` of the ball
:math:`\beta_j` of the rigorous eigen-decomposition when :math:`\nu`'s box meets
:math:`\beta_j` and no other :math:`\beta_i` (the :math:`\beta`'s are disjoint and each holds
exactly one eigenvalue, :math:`\nu` is one of them); then :math:`\operatorname{Re}\mu_j = 0`
exactly, and :math:`\mu_j \ne 0` iff :math:`y \ne 0`.

*Proof.* (1) Suppose :math:`|c_k(t) - c_k(t_1)| \le r` for :math:`k \in C` on :math:`[t_1,
t^*]`. With :math:`x_\ell = e^{\lambda_1 t}\alpha_\ell\varphi_1 + u_\ell` (good-triple
notation), for :math:`i \in C`, :math:`k \in C\setminus\{\ell\}`: :math:`S_{i\ell} - S_{ik} =
-x_i^\top B c_k = -e^{\lambda_1 t}\alpha_\ell\varphi_1^\top B c_k - u_\ell^\top B c_k -
c_i^\top B c_k`. The good-triple lemma gives :math:`\sigma\alpha_\ell \ge \mu_\sigma` and
:math:`\|u_\ell\|_* \le e^{\lambda_1 s}\hat a_\ell` (its step 1''), so with :math:`|u^\top B
c| \le \|u\|_*|T^\top B c|` and :math:`1 \le e^{\lambda_1 s}`:
:math:`S_{i\ell} - S_{ik} \ge e^{\lambda_1 s} U`, hence :math:`\sum_{k \in C\setminus\ell}
P_{ik} \le (m-1) e^{-U e^{\lambda_1 s}}`; the good-triple lemma gives :math:`\sum_{k \notin C}
P_{ik} \le (n-m)e^{-G_\sigma e^{2\lambda_1 s}}`. (2) :math:`\dot c_k = V\sum_j (P_{kj} -
P_{\ell j})(x_j - x_\ell)` (rows of :math:`P` sum to 1), with :math:`|x_j - x_\ell| \le Y + r`
in :math:`C` and :math:`\le e^{\lambda_1 t}\delta|\varphi_1| + |u_j| + |u_\ell| \le
e^{\lambda_1 s} D` outside (the :math:`\alpha`'s stay in their range at :math:`t_1`). With
:math:`\int_0^\infty e^{-U e^{\lambda_1 s}}ds = E_1(U)/\lambda_1 \le e^{-U}/(\lambda_1 U)` and
:math:`\int_0^\infty e^{\lambda_1 s} e^{-G e^{2\lambda_1 s}} ds \le e^{-G}/(2\lambda_1 G)`,
:math:`|c_k(t^*) - c_k(t_1)| \le r_C < r`: by continuity the assumption holds beyond
:math:`t^*`, so for all :math:`t`, and :math:`\dot c_k` is integrable. (3) :math:`\dot z_\ell =
e^{-tV} V \sum_j P_{\ell j}(x_j - x_\ell)` is bounded by :math:`e^{\|V\| t}` times the doubly
exponentially small weights of (1): integrable, so :math:`z_\ell` converges. (4)
:math:`\psi^*(z_k - z_\ell) = \psi^*(e^{-tV}c_k) = e^{-\mu t}\psi^*(c_k(t))` and
:math:`|\psi^*(c_k(t)) - \psi^*(c_k(t_1))| \le |\psi^*|\,r`. (5) *Turns*: with :math:`\mu =
i\omega`, :math:`|e^{-\mu t}| = 1`, so :math:`|\psi^*(z_k - z_\ell)| = |\psi^*(c_k(t))| \ge \eta`
and :math:`e^{i\omega t}\psi^*(z_k - z_\ell) = \psi^*(c_k(t)) \to L := \psi^*(c_k^\infty)`,
:math:`|L| \ge \eta > 0`. If :math:`z_k` converged, so would :math:`z_k - z_\ell` (by (3)), to
some :math:`w`, and :math:`e^{-i\omega t}L = \psi^*(w) + o(1)`: but :math:`e^{-i\omega t}L`
has no limit for :math:`\omega \ne 0`, :math:`L \ne 0`. (6) *Converges*: with the spectral
projections, :math:`e^{-tV} = \Pi_0 + e^{-tV}(I - \Pi_0)` (:math:`\Pi_0 = 0` when 0 is not an
eigenvalue; a simple eigenvalue 0 has :math:`V\Pi_0 = 0`), and :math:`\|e^{-tV}(I - \Pi_0)\|
\le C e^{-\epsilon t}` for :math:`0 < \epsilon <` the smallest positive real part; :math:`c_k(t)`
is bounded and converges (2), so :math:`z_k - z_\ell = e^{-tV}c_k(t) \to \Pi_0 c_k^\infty`. ∎

Example — :math:`V = \operatorname{diag}(1, -\tfrac12)`, :math:`Q = K = I`, two tokens on the
same side: the leader (the larger :math:`x^{(1)}`) keeps still, the follower's first coordinate
tends to the leader's while its second moves away like :math:`e^{t/2}`::

    >>> from fractions import Fraction as F
    >>> from flint import arb_mat
    >>> from verify.lemmas._instance import read_instance
    >>> inst = read_instance({"instance": {"V": [["1", "0"], ["0", "-1/2"]],
    ...     "Q": [["1", "0"], ["0", "1"]], "K": [["1", "0"], ["0", "1"]],
    ...     "x0": [["100", "0"], ["90", "1"]], "model": {"form": "z", "beta": "1",
    ...     "attention": "softmax", "mask": "full", "normalisation": "none"}}})
    >>> z = arb_mat([[100, 0], [90, 1]])   # exact rescaled tokens at t1 = 0
    >>> p = {"T": [["1", "0"], ["0", "1"]], "zero": [], "mu_plus": "89", "leaders": {"plus": 0},
    ...      "r": "1/1024"}
    >>> report = check(inst, F(0), z, [], p)
    >>> report.holds, report.conclusions["behaviour"]
    (True, 'drifts')
    >>> report.conclusions["drifting"]  # |z_1 - z_0| ≥ (1023/1024) e^(t/2): rate 1/2, η
    [{'follower': 1, 'leader': 0, 'side': 'plus', 'rate': '1*2^-1', 'eta': '1023*2^-10'}]

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import acb, acb_mat, arb, arb_mat, fmpq, fmpq_mat, fmpq_poly

from verify.lemmas import good_triple
from verify.lemmas._balls import CheckFailure, LemmaReport, ball_text, dot, exact, rational
from verify.lemmas.good_triple import _norm, _two_norm_bound, _vec

__all__ = ["ID", "check", "imaginary_axis_roots"]

ID = "hyperplane-drift"


def _parameters(parameters: dict) -> tuple[dict, Fraction]:
    try:
        leaders = {str(k): int(v) for k, v in dict(parameters["leaders"]).items()}
        r = rational(parameters["r"])
    except (KeyError, TypeError, ValueError):
        raise CheckFailure(f"lemma {ID} needs parameters leaders ({{side: token}}) and r "
                           "(besides those of good-triple).") from None
    if not r > 0:
        raise CheckFailure("r must be positive.")
    return leaders, r


def check(inst, t1: Fraction, z: arb_mat, symmetries: list, parameters: dict) -> LemmaReport:
    """Check the lemma on the balls ``z`` (rescaled tokens at ``t1``): the good-triple
    lemma's hypotheses with its ``parameters`` (``T``, ``mu_plus``, ``mu_minus``, ``zero``),
    then, for each side with two tokens or more, its leader (``leaders``: ``{"plus": ℓ}``)
    and the allowance ``r`` (rational); the conclusions add the behaviour of the followers."""
    report, bounds = good_triple.trap(inst, t1, z, symmetries, parameters)
    report.lemma = ID
    leaders, r = _parameters(parameters)
    if not report.holds:
        return report
    n, d = inst.n, inst.d
    clusters = {name: side for name, side in bounds["sides"].items() if len(side[0]) >= 2}
    if not clusters:
        raise CheckFailure("no trapped side has two tokens: there is no follower.")
    if set(leaders) != set(clusters):
        raise CheckFailure(f"leaders must name one token for each side with two tokens or "
                           f"more ({sorted(clusters)}).")
    lam1, phi, B, T, U0 = (bounds[k] for k in ("lam1", "phi", "B", "T", "U0"))
    grow1 = (lam1 * exact(t1)).exp()
    V = arb_mat([[exact(v) for v in row] for row in inst.V])
    X = [_vec(bounds["E"], [z[i, a] for a in range(d)]) for i in range(n)]
    allowance = arb(0, exact(r))
    normV = _two_norm_bound(V)
    D = grow1 * bounds["spread"] * _norm(phi) + 2 * _two_norm_bound(T) * U0
    Tt = T.transpose()
    offsets = {}
    for name, (members, sign, mu, G) in clusters.items():
        lead = leaders[name]
        if lead not in members:
            raise CheckFailure(f"the leader {lead} of side {name} is not on that side.")
        c = {k: [X[k][a] - X[lead][a] for a in range(d)] for k in members}
        region = {k: [arb(0)] * d if k == lead else [v + allowance for v in c[k]]
                  for k in members}
        U = None
        for k in members:
            if k == lead:
                continue
            Bc = _vec(B, region[k])
            toward = arb((-sign * dot(phi, Bc)).lower())
            rest = bounds["a_hat"][lead] * _norm(_vec(Tt, Bc)) + max(
                abs(dot(region[i], Bc)).upper() for i in members)
            gap = grow1 * mu * toward - rest
            U = gap if U is None or gap.lower() < U.lower() else U
        report.require(f"lead-{name}", U, f"every token of T_{name} prefers its leader {lead} "
                       f"to the other tokens of T_{name} by a score gap ≥ U e^(λ1 s)")
        if not U > 0:
            continue
        m = len(members)
        Y = max(_norm(c[k]) for k in members if k != lead)
        outside = (n - m) * D * (-G).exp() / (lam1 * G) if n > m else arb(0)
        moved = normV * (2 * (m - 1) * (Y + exact(r)) * (-U).exp() / (lam1 * U) + outside)
        report.require(f"offsets-{name}", exact(r) - moved, f"the offsets x_k - x_{lead} of "
                       f"T_{name} move by less than r for all t ≥ t1")
        offsets[name] = (lead, c)
    conclusions = {**report.conclusions, "leaders": {k: leaders[k] for k in sorted(leaders)},
                   "r": str(r)}
    if report.holds:
        conclusions.update(_behaviour(report, inst, offsets, r))
    report.conclusions = conclusions
    return report


def imaginary_axis_roots(V: list) -> list[tuple[acb, bool]]:
    r"""The eigenvalues of the exact matrix ``V`` on the imaginary axis (module docstring, "The
    imaginary axis, exactly"): ``(box, nonzero)`` per eigenvalue, the box at the working
    precision; a root of a higher factor of :math:`q` whose sign Arb does not decide is left out.

    >>> from fractions import Fraction as F
    >>> [(complex(box.mid()), nonzero) for box, nonzero in imaginary_axis_roots(
    ...     [[1, 0, 0], [0, 0, F(-1, 2)], [0, F(1, 2), 0]])]
    [(0.5j, True), (-0.5j, True)]
    >>> imaginary_axis_roots([[2, 0], [0, 0]])[0][1], imaginary_axis_roots([[1, 1], [0, -1]])
    (False, [])
    """
    d = len(V)
    entries = [Fraction(v) for row in V for v in row]
    p = fmpq_mat(d, d, [fmpq(v.numerator, v.denominator) for v in entries]).charpoly()
    coefficients = p.coeffs()
    found: list[tuple[acb, bool]] = [(acb(0), False)] if coefficients[0] == 0 else []
    q = fmpq_poly(coefficients[0::2]).gcd(fmpq_poly(coefficients[1::2]))
    for factor, _ in q.factor()[1] if q.degree() >= 1 else []:
        if factor.degree() == 1:  # c1 y + c0: y = -c0/c1, exactly
            c0, c1 = (Fraction(int(c.p), int(c.q)) for c in factor.coeffs())
            roots = [exact(-c0 / c1)] if -c0 / c1 < 0 else []
        else:  # a real root's box decides its sign, or the root is left out
            roots = [y.real for y, _ in factor.complex_roots() if y.imag == 0 and y.real < 0]
        for y in roots:
            w = (-y).sqrt()
            found += [(acb(0, w), True), (acb(0, -w), True)]
    return found


def _on_axis(V: list, values) -> dict[int, bool]:
    """The eigenvalue balls ``values[j]`` (rigorous, disjoint, one eigenvalue each) whose
    eigenvalue is on the imaginary axis, exactly: ``{j: nonzero}``."""
    d, matched = len(V), {}
    for box, nonzero in imaginary_axis_roots(V):
        meets = [j for j in range(d) if values[j].overlaps(box)]
        if len(meets) == 1:
            matched[meets[0]] = nonzero
    return matched


def _witnesses(eigen: list[int], left, offsets: dict, r: Fraction, d: int) -> dict:
    """The largest certified :math:`\\eta > 0` of each follower over the left eigenvectors of
    the eigenvalues ``eigen``: ``{k: (eta, leader, side, j)}``."""
    best = {}
    for j in eigen:
        psi = [left[j, a] for a in range(d)]
        size = _norm([abs(p) for p in psi])
        for name, (lead, c) in sorted(offsets.items()):
            for k in sorted(c):
                if k == lead:
                    continue
                eta = abs(sum((p * v for p, v in zip(psi, c[k], strict=True)), acb(0))) \
                    - size * exact(r)
                if k not in best or eta.lower() > best[k][0].lower():
                    best[k] = (eta, lead, name, j)
    return {k: w for k, w in best.items() if w[0] > 0}


def _behaviour(report: LemmaReport, inst, offsets: dict, r: Fraction) -> dict:
    """The followers' behaviour (module docstring): a drift witness per follower (the
    eigenvalue of negative real part with the largest certified :math:`\\eta`), else a turning
    one (an eigenvalue on the imaginary axis other than 0, decided exactly), else convergence
    when every eigenvalue of ``V`` has a positive real part but perhaps a simple 0, else
    undecided."""
    d = inst.d
    values, left, _ = acb_mat([[exact(v) for v in row] for row in inst.V]).eig(
        left=True, right=True)
    best = _witnesses([j for j in range(d) if values[j].real < 0], left, offsets, r, d)
    if best:
        drifting = [{"follower": k, "leader": lead, "side": name,
                     "rate": ball_text(-values[j].real), "eta": ball_text(eta)}
                    for k, (eta, lead, name, j) in sorted(best.items())]
        strongest = max((w[0] for w in best.values()), key=lambda e: e.lower())
        report.require("drift", strongest, "a follower k keeps |ψ*(z_k - z_leader)| ≥ η "
                       "e^(|Re μ| t) along a left eigenvector ψ* of V with Re μ < 0")
        return {"behaviour": "drifts", "drifting": drifting}
    axis = _on_axis(inst.V, values)
    best = _witnesses([j for j, nonzero in axis.items() if nonzero], left, offsets, r, d)
    if best:
        turning = [{"follower": k, "leader": lead, "side": name,
                    "frequency": ball_text(abs(values[j].imag)), "eta": ball_text(eta)}
                   for k, (eta, lead, name, j) in sorted(best.items())]
        strongest = max((w[0] for w in best.values()), key=lambda e: e.lower())
        report.require("turn", strongest, "a follower k keeps |ψ*(z_k - z_leader)| ≥ η while "
                       "e^(iωt) ψ*(z_k - z_leader) converges, along a left eigenvector ψ* of V "
                       "with the eigenvalue iω, ω ≠ 0 (on the imaginary axis, exactly)")
        return {"behaviour": "turns", "drifting": [], "turning": turning}
    zero = [j for j, nonzero in axis.items() if not nonzero]
    others = [j for j in range(d) if j not in axis]
    if len(zero) == len(axis) and all(values[j].real > 0 for j in others):
        smallest = min((values[j].real for j in others), key=lambda v: v.lower())
        report.require("followers-converge", smallest, "every eigenvalue of V has a positive "
                       "real part" + (" but a simple 0" if zero else "") + ": e^(-tV) c_k(t) "
                       "converges")
        if zero:
            return {"behaviour": "converges", "drifting": [], "kernel": "each follower tends "
                    "to lim z_leader + Π0 c_k(∞) (V has the simple eigenvalue 0)"}
        return {"behaviour": "converges", "drifting": []}
    return {"behaviour": "undecided", "drifting": []}
