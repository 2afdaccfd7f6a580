r"""Lemma ``equilibrium``: an isolated equilibrium proved by the Krawczyk operator, its Jacobian's
spectrum enclosed by a logarithmic norm, and a contraction ball holding the state at
:math:`t_1` — so the tokens converge to that equilibrium, exponentially.

Source: own proof below (Krawczyk's theorem and the logarithmic-norm contraction argument are
standard: Krawczyk 1969, Moore 1977; Dahlquist/Lozinskii's logarithmic norm, e.g. Söderlind,
*BIT* 46 (2006)).

**Which cases.** Tokens on the sphere (post-LN) with one softmax head, :math:`V = cI`,
:math:`c > 0`, any :math:`B = \beta Q^\top K`, and a *causal* mask (or one token): token 0
attends only to itself, so :math:`\dot x_0 = P^\perp_{x_0}(c x_0) = 0` and it never moves — it
is *frozen* at its exact initial position, a parameter of the remaining system. The
equilibria of the full-attention sphere come in continuous families (rotations: the Jacobian is
singular along the orbit), so no equilibrium there is isolated; the freezing of token 0 is what
removes that symmetry in the causal case, and this lemma refuses the full mask (the
``sphere-consensus`` lemma covers it). The plain model is not covered: its equilibria (e.g. the
origin for :math:`V = -I`) are degenerate.

**Setting.** The moving tokens :math:`u = (x_1, \dots, x_{n-1}) \in \mathbb R^N`,
:math:`N = (n-1)d`, solve :math:`\dot u = F(u)` with :math:`F_i = y_i - \langle x_i,
y_i\rangle x_i`, :math:`y_i = c\sum_{j \le i} P_{ij} x_j`, :math:`P_{ij} = \operatorname{softmax}
_{j \le i}(x_i^\top B x_j)` and :math:`x_0` fixed. On the unit sphere this is the model's
field (:math:`P^\perp_{x_i} y_i`; :mod:`verify.enclosure._fields` divides by :math:`|x_i|^2 = 1`),
and the exact solution stays on the sphere, so it solves this ambient equation too — whose
Jacobian, unlike the model's extension, also contracts across the sphere
(:math:`\partial F_i/\partial x_i \ni -2\langle x_i, y_i\rangle` radially). The Jacobian
:math:`J = DF` is computed in closed form (:func:`jacobian`):
:math:`\partial y_i/\partial x_k = c P_{ik}\big(I + (x_k - m_i)(B^\top x_i)^\top\big) +
\delta_{ik}\, c\sum_j P_{ij}(x_j - m_i)(B x_j)^\top`, :math:`m_i = \sum_j P_{ij} x_j`, and
:math:`\partial F_i/\partial x_k = (I - x_i x_i^\top)\,\partial y_i/\partial x_k -
\delta_{ik}\big(\langle x_i, y_i\rangle I + x_i y_i^\top\big)`.

**Lemma.** Let :math:`\tilde u \in \mathbb R^N`, :math:`\varepsilon, r > 0`, :math:`T` an
invertible matrix, :math:`\|v\|_T = \|T^{-1}v\|_\infty`, :math:`X = \tilde u + [-\varepsilon,
\varepsilon]^N`, :math:`Y \supseteq \{u : \|u - \tilde u\|_T \le r\}` a box, :math:`C` any
matrix, and suppose (all in balls, for every frozen :math:`x_0` in its ball):

1. (Krawczyk) :math:`K = \tilde u - C F(\tilde u) + (I - C\,J(X))(X - \tilde u) \subset
   \operatorname{int} X`;
2. (logarithmic norm) :math:`\mu_T(J(u)) = \max_k \big((T^{-1}JT)_{kk} + \sum_{l \ne k}
   |(T^{-1}JT)_{kl}|\big) \le -\gamma < 0` for all :math:`u \in Y`;
3. (inside) :math:`\delta^* + \delta_1 < r`, where :math:`\delta^* \ge \|X - \tilde u\|_T` and
   :math:`\delta_1 \ge \|u(t_1) - u^*\|_T` for every :math:`u^* \in X`.

Then :math:`F` has exactly one zero :math:`u^*` in :math:`X`; every eigenvalue of
:math:`J(u^*)` has real part :math:`\le -\gamma`; and for all :math:`t \ge t_1`,
:math:`\|u(t) - u^*\|_T \le \delta_1 e^{-\gamma (t - t_1)}`: every token converges to
:math:`u^*` (the certified limit, in the balls :math:`X`), exponentially at the rate
:math:`\gamma`.

*Proof.* (1) is Krawczyk's theorem: :math:`K(X) \subseteq X` gives a zero in :math:`X` (Brouwer,
for the map :math:`u \mapsto u - CF(u)`, whose values lie in :math:`K` by the mean-value form),
and :math:`K \subset \operatorname{int} X` makes :math:`C` and every matrix of :math:`J(X)`
nonsingular and the zero unique. (2) :math:`\operatorname{Re}\lambda \le \mu_T(A)` for every
eigenvalue of :math:`A`, and :math:`u^* \in Y` by (3). (3) The ball :math:`\mathcal B =
\{\|u - \tilde u\|_T \le r\}` is convex and contains :math:`\mathcal B^* = \{\|u - u^*\|_T \le
\delta_1\}` (since :math:`\|u^* - \tilde u\|_T \le \delta^*`). While :math:`u(t) \in \mathcal B`,
:math:`\tfrac{d}{dt}(u - u^*) = A(t)(u - u^*)` with :math:`A = \int_0^1 J(u^* + s(u - u^*))ds`
(the segment lies in :math:`\mathcal B \subseteq Y`), and :math:`\mu_T` is sub-additive and
positively homogeneous, so :math:`\mu_T(A) \le -\gamma` and :math:`D^+\|u - u^*\|_T \le
-\gamma\|u - u^*\|_T`. Hence :math:`\|u(t) - u^*\|_T` never increases while in
:math:`\mathcal B^*`, :math:`u` never leaves :math:`\mathcal B^*`, and Grönwall gives the
bound. ∎

The matrix :math:`T` is the prover's choice (any invertible one is checked the same way): an
eigenbasis of :math:`J(\tilde u)` when its spectrum is real and the basis well conditioned, else
a scaled real Schur basis. In the :math:`\infty`-norm a complex pair :math:`a \pm ib` counts as
:math:`a + |b|`, so a strongly rotating equilibrium is out of reach of this check.

When the consensus configuration :math:`(x_0, \dots, x_0)` — a zero of :math:`F` for every
:math:`x_0`, since :math:`P^\perp_{x_0}(c x_0) = 0` — lies in :math:`X` (each moving token's box
contains the frozen token's ball), uniqueness makes it :math:`u^*`: every token tends to
:math:`x_0(0)`.

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb, arb_mat

from verify.lemmas._balls import (
    CheckFailure,
    LemmaReport,
    ball_text,
    dot,
    exact,
    exact_matrix,
    rational,
)

__all__ = ["ID", "check", "frozen_tokens", "initial_row", "field", "jacobian"]

ID = "equilibrium"


def frozen_tokens(inst) -> list[int]:
    """The tokens that attend only to themselves (causal mask: token 0; one token)."""
    if inst.mask == "causal" or inst.n == 1:
        return [0]
    return []


def _allowed(inst, i: int) -> range:
    return range(i + 1) if inst.mask == "causal" else range(inst.n)


def _attention(inst, X: list, i: int):
    """Row ``i``: the weights ``P_ij`` (allowed ``j``), ``y_i = c m_i`` and ``m_i``."""
    d, c = inst.d, exact(inst.scalar_value())
    B = [[exact(v) for v in row] for row in inst.B]
    cols = list(_allowed(inst, i))
    Bxj = {j: [sum((B[a][b] * X[j][b] for b in range(d)), arb(0)) for a in range(d)]
           for j in cols}
    scores = [dot(X[i], Bxj[j]) for j in cols]
    ref = scores[cols.index(i)]  # softmax is shift-invariant: weights are ≤ e^{score gap}
    weights = [(s - ref).exp() for s in scores]
    total = sum(weights, arb(0))
    P = {j: w / total for j, w in zip(cols, weights, strict=True)}
    m = [sum((P[j] * X[j][a] for j in cols), arb(0)) for a in range(d)]
    return P, [c * v for v in m], m


def field(inst, X: list) -> list:
    """``F_i`` for every token (frozen ones included: 0 for them on the sphere), ``X`` a list
    of rows of balls."""
    out = []
    for i in range(inst.n):
        _, y, _ = _attention(inst, X, i)
        inner = dot(X[i], y)
        out.append([y[a] - inner * X[i][a] for a in range(inst.d)])
    return out


def jacobian(inst, X: list, moving: list) -> arb_mat:
    """:math:`\\partial F_i / \\partial x_k` for ``i, k`` in ``moving`` (module docstring), as a
    ``(|moving| d)``-square ball matrix."""
    d, c = inst.d, exact(inst.scalar_value())
    B = [[exact(v) for v in row] for row in inst.B]
    index = {k: p for p, k in enumerate(moving)}
    J = arb_mat(len(moving) * d, len(moving) * d)
    for i in moving:
        P, y, m = _attention(inst, X, i)
        inner = dot(X[i], y)
        Btx = [sum((B[a][b] * X[i][a] for a in range(d)), arb(0)) for b in range(d)]
        spread = [[sum((P[j] * (X[j][a] - m[a]) * sum((B[b][e] * X[j][e] for e in range(d)),
                                                         arb(0)) for j in P), arb(0))
                   for b in range(d)] for a in range(d)]
        for k in P:
            if k not in index:
                continue
            G = [[c * P[k] * ((1 if a == b else 0) + (X[k][a] - m[a]) * Btx[b])
                  + (c * spread[a][b] if k == i else 0) for b in range(d)] for a in range(d)]
            xG = [dot(X[i], [G[a][b] for a in range(d)]) for b in range(d)]
            for a in range(d):
                for b in range(d):
                    v = G[a][b] - X[i][a] * xG[b]
                    if k == i:
                        v -= (inner if a == b else 0) + X[i][a] * y[b]
                    J[index[i] * d + a, index[k] * d + b] = v
    return J


def initial_row(inst, i: int) -> list:
    """:math:`x_i(0) = x0_i / |x0_i|` in balls (the model's initial token on the sphere)."""
    row = [exact(v) for v in inst.x0[i]]
    size = dot(row, row).sqrt()
    return [v / size for v in row]


def _vector(X: list, moving: list) -> list:
    return [v for k in moving for v in X[k]]


def _rows(inst, frozen_rows: dict, u: list, moving: list) -> list:
    X = [list(frozen_rows[i]) if i in frozen_rows else None for i in range(inst.n)]
    for p, k in enumerate(moving):
        X[k] = u[p * inst.d:(p + 1) * inst.d]
    return X


def _norm_upper(Tinv: arb_mat, v: list) -> arb:
    """An upper bound of :math:`\\|T^{-1} v\\|_\\infty` for the ball vector ``v``."""
    w = Tinv * arb_mat([[x] for x in v])
    return max((abs(w[k, 0]).upper() for k in range(w.nrows())), default=arb(0))


def check(inst, t1: Fraction, x: arb_mat, parameters: dict) -> LemmaReport:
    """Check the lemma on the balls ``x`` (tokens at ``t1``) with ``parameters``: ``centre``
    (the moving tokens' rows of :math:`\\tilde u`, rationals), ``box`` (:math:`\\varepsilon`),
    ``radius`` (:math:`r`) and ``T`` (rationals, :math:`N \\times N`)."""
    if inst.normalisation != "sphere" or inst.form != "x" or inst.heads != 1 or \
            inst.attention != "softmax" or inst.mlp is not None:
        raise CheckFailure(f"lemma {ID} is about tokens on the sphere with one softmax head.")
    lam = inst.scalar_value()
    if lam is None or not lam > 0:
        raise CheckFailure(f"lemma {ID} needs V = cI with c > 0.")
    frozen = frozen_tokens(inst)
    if inst.mask not in ("causal", "full") or not frozen:
        raise CheckFailure(f"lemma {ID} needs a frozen token (a causal mask): with full "
                           "attention the equilibria come in rotation families, none isolated.")
    n, d = inst.n, inst.d
    moving = [k for k in range(n) if k not in frozen]
    if not moving:
        raise CheckFailure(f"lemma {ID}: every token is frozen; nothing moves.")
    try:
        centre = [[rational(v) for v in row] for row in parameters["centre"]]
        eps, r = rational(parameters["box"]), rational(parameters["radius"])
        T = exact_matrix(parameters["T"])
    except (KeyError, TypeError) as exc:
        raise CheckFailure(f"lemma {ID} needs centre, box, radius and T ({exc!r}).") from None
    N = len(moving) * d
    if len(centre) != len(moving) or any(len(row) != d for row in centre) or \
            (T.nrows(), T.ncols()) != (N, N) or not eps > 0 or not r > 0:
        raise CheckFailure(f"lemma {ID}: centre must have {len(moving)} rows of {d}, T be "
                           f"{N}×{N}, box and radius positive.")
    report = LemmaReport(ID)
    frozen_rows = {i: initial_row(inst, i) for i in frozen}  # frozen: x_i(t) = x_i(0)
    u0 = [exact(v) for row in centre for v in row]
    E, R = exact(eps), exact(r)
    box = [arb(v, E) for v in u0]
    # 1. Krawczyk
    J0 = jacobian(inst, _rows(inst, frozen_rows, u0, moving), moving)
    C = arb_mat([[arb(v.mid()) for v in row] for row in
                 arb_mat([[arb(v.mid()) for v in row] for row in J0.tolist()]).inv().tolist()])
    F0 = _vector(field(inst, _rows(inst, frozen_rows, u0, moving)), moving)
    JX = jacobian(inst, _rows(inst, frozen_rows, box, moving), moving)
    identity = arb_mat([[1 if a == b else 0 for b in range(N)] for a in range(N)])
    K = arb_mat([[v] for v in u0]) - C * arb_mat([[v] for v in F0]) + \
        (identity - C * JX) * arb_mat([[arb(0, E)] for _ in range(N)])
    reach = max(abs(K[k, 0] - u0[k]).upper() for k in range(N))
    report.require("krawczyk", E - reach, "K(X) ⊂ int X: a unique equilibrium u* in the box X")
    # 2. logarithmic norm on the box hull of the T-ball
    try:
        Tinv = T.inv()
    except ZeroDivisionError:
        raise CheckFailure("T is not invertible.") from None
    width = [sum((abs(T[k, q]) for q in range(N)), arb(0)) * R for k in range(N)]
    hull = [arb(v, w.upper()) for v, w in zip(u0, width, strict=True)]
    M = Tinv * jacobian(inst, _rows(inst, frozen_rows, hull, moving), moving) * T
    mu = max((M[k, k] + sum((abs(M[k, q]) for q in range(N) if q != k), arb(0))).upper()
             for k in range(N))
    gamma = arb((-mu).lower())
    report.require("contraction", gamma, "μ_T(J) ≤ -γ < 0 on the box hull of the T-ball of "
                                         "radius r around the centre")
    # 3. inside
    delta_star = _norm_upper(Tinv, [arb(0, E)] * N)
    state = _vector([[x[k, a] for a in range(d)] for k in range(n)], moving)
    delta1 = _norm_upper(Tinv, [s - b for s, b in zip(state, box, strict=True)])
    report.require("inside", R - delta_star - delta1, "δ* + δ1 < r: the state at t1 is in the "
                                                      "contraction ball around u*")
    limits = [[ball_text(v) for v in frozen_rows[i]] if i in frozen_rows else
              [ball_text(box[moving.index(i) * d + a]) for a in range(d)] for i in range(n)]
    report.conclusions = {
        "t1": str(t1), "frozen": frozen, "limits": limits, "gamma": ball_text(gamma),
        "delta1": ball_text(delta1),
        "bound": "||T^-1 (u(t) - u*)||_inf <= delta1 exp(-gamma (t - t1)) for all t >= t1",
        "spectrum": "every eigenvalue of DF(u*) has real part <= -gamma"}
    return report
