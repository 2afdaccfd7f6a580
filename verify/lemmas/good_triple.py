r"""Lemma ``good-triple``: for a good triple, a split of the tokens by the sign of
:math:`\varphi_1^*(z_i)` at one time :math:`t_1` that survives a dominance test traps them for
all time; then every :math:`\varphi_1^*(z_i)` converges to :math:`a`, :math:`0` or :math:`b` (the
three hyperplanes of Theorem 4.2).

Source: Definition 4.1 and Theorem 4.2 of Geshkovski–Letrouit–Polyanskiy–Rigollet (arXiv
2305.05465); the trapping statement with explicit constants and its proof are this module's
own, so that every hypothesis is a finite inequality on the state at :math:`t_1`.

**Setting.** The rescaled form :math:`\dot z_i = \sum_j P_{ij} V (z_j - z_i)` with
:math:`P = \operatorname{softmax}(\langle Q x_i, K x_j\rangle)`, :math:`x = e^{tV} z`,
:math:`B = \beta Q^\top K`. :math:`\lambda_1` is real, positive, simple and dominant
(:math:`\lambda_1 > |\lambda_k|`), :math:`\varphi_1`, :math:`\varphi_1^*` its right and left
eigenvectors with :math:`\varphi_1^*(\varphi_1) = 1`, :math:`c = \varphi_1^\top B \varphi_1 > 0`
(a good triple); :math:`W = \ker\varphi_1^*`, :math:`\pi_W = I - \varphi_1 \varphi_1^*`,
:math:`\alpha_i = \varphi_1^*(z_i)`, :math:`u_i = \pi_W x_i`. Since :math:`\varphi_1^* V =
\lambda_1\varphi_1^*`,

.. math:: \dot\alpha_i = \lambda_1 \textstyle\sum_j P_{ij}(\alpha_j - \alpha_i), \qquad
          \dot u_i = \textstyle\sum_j P_{ij}\, V u_j .

(So :math:`\max_j \alpha_j` never increases and :math:`\min_j\alpha_j` never decreases, for all
:math:`t \ge 0`: the monotonicity parts of Theorem 4.2, for every instance.)

**Lemma.** Let :math:`T` be invertible, :math:`\|u\|_* = |T^{-1}u|_2`,
:math:`\rho \ge \|T^{-1} V \pi_W T\|_2` with :math:`\rho < \lambda_1`, :math:`r \ge
\rho/\lambda_1`, :math:`\kappa_1 \ge |T^\top B^\top \varphi_1|_2`, :math:`\kappa_2 \ge |T^\top B
\varphi_1|_2`, :math:`\kappa_3 \ge \|T^\top B T\|_2`, and at :math:`t_1`: :math:`U_0 \ge
\max_j \|u_j\|_*`, :math:`A_+ \ge \max_j \alpha_j`, :math:`A_- \ge -\min_j\alpha_j`,
:math:`\delta \ge \max_j \alpha_j - \min_j\alpha_j`, and for each token :math:`l`

.. math:: \hat a_l \ge \max(\|u_l\|_*, rU_0), \qquad \hat p_l \ge \max(|\varphi_1^\top B u_l|,
          r\kappa_1 U_0), \qquad \hat q_l \ge \max(|u_l^\top B \varphi_1|, r\kappa_2 U_0).

Split the tokens into :math:`T_+ = \{\alpha_i(t_1) > 0\}`, :math:`T_- = \{\alpha_i(t_1) < 0\}`
and :math:`T_0` (tokens held on :math:`\{\varphi_1^* = 0\}` forever by an exact symmetry
:math:`S` fixing them with :math:`S^\top\varphi_1^* = -\varphi_1^*`); let :math:`O_+` be the
tokens outside :math:`T_+` (its *outsiders*), :math:`\nu_j = \mu_-` for :math:`j \in T_-` and
:math:`\nu_j = 0` for :math:`j \in T_0`. Suppose that for some :math:`\mu_+ > 0`: if :math:`O_+ =
\emptyset`, :math:`\min_{i \in T_+}\alpha_i(t_1) > \mu_+`; else

.. math:: G_+ = \min_{i \in T_+,\ j \in O_+} \Big( e^{2\lambda_1 t_1} c\, \mu_+(\mu_+ + \nu_j)
          - e^{\lambda_1 t_1}\big(A_+(\hat p_i + \hat p_j) + \delta\hat q_i\big) - \kappa_3
          \hat a_i(\hat a_i + \hat a_j) \Big) > 0, \qquad \min_{i \in T_+}\alpha_i(t_1) -
          \delta\, |O_+| \frac{e^{-G_+}}{2G_+} > \mu_+

(and the same for :math:`T_-` with :math:`-\alpha`, :math:`\mu_-`, :math:`A_-`, :math:`\nu_j =
\mu_+` on :math:`T_+`). Then for all :math:`t \ge t_1`: :math:`\alpha_i \ge \mu_+` on
:math:`T_+`, :math:`\alpha_i \le -\mu_-` on :math:`T_-`, :math:`\alpha_i = 0` on :math:`T_0`;
for :math:`i \in T_\pm`, :math:`\sum_{j \in O_\pm} P_{ij}(t) \le |O_\pm|\, e^{-G_\pm
e^{2\lambda_1(t - t_1)}}` (nothing to bound when :math:`O_\pm = \emptyset`); and every
:math:`\alpha_i`, :math:`i \in T_+`, converges to :math:`b = \lim \max_j \alpha_j \in [\mu_+,
\max_j\alpha_j(t_1)]`, every :math:`\alpha_i`, :math:`i \in T_-`, to :math:`a =
\lim\min_j\alpha_j`: :math:`\operatorname{dist}(z_i, H) \to 0` for the hyperplanes :math:`H =
\{\varphi_1^* \in \{a, 0, b\}\}`.

It is sharper than this lemma's first version, which had
:math:`G_+ = e^{2\lambda_1 t_1}c\mu_+^2 - e^{\lambda_1 t_1}U_0(2A\kappa_1 + \delta\kappa_2) -
2\kappa_3U_0^2` with one :math:`A \ge \max_j|\alpha_j|` and required it of every side: a side
holding every token needs no dominance (step 1'); the dominant term uses both trapped sides
(:math:`\nu_j`); each token's own components at :math:`t_1` replace the one norm bound
:math:`U_0` (step 1''; since
:math:`\hat p_l \le \kappa_1U_0`, :math:`\hat q_l \le \kappa_2U_0`, :math:`\hat a_l \le U_0`,
each :math:`G_\pm` is at least the first version's, so its certificates are accepted).

*Proof.* (1) :math:`\tfrac{d}{dt}\max_j\|u_j\|_* \le \rho\max_j\|u_j\|_*` (:math:`\dot u_i =
\sum_j P_{ij}Vu_j` and :math:`\|T^{-1}V u\|_2 \le \rho\|u\|_*` on :math:`W`), so
:math:`\|u_j(t)\|_* \le U_0 e^{\rho s}` with :math:`s = t - t_1`; the :math:`\alpha`'s stay in
:math:`[\min\alpha(t_1), \max\alpha(t_1)]`. (1') If :math:`O_+ = \emptyset`, every token is in
:math:`T_+` and :math:`\alpha_i(t) \ge \min_j\alpha_j(t) \ge \min_j\alpha_j(t_1) > \mu_+` for
all :math:`t \ge t_1` (the minimum never decreases). (1'') :math:`\|\dot u_l\|_* \le \rho U_0
e^{\rho s}`, so :math:`\|u_l(t) - u_l(t_1)\|_* \le U_0(e^{\rho s} - 1)` and, by Cauchy–Schwarz
in the coordinates :math:`T^{-1}u`, :math:`|\varphi_1^\top B u_l(t)| \le a + \kappa_1U_0
(e^{\rho s} - 1)` with :math:`a = |\varphi_1^\top B u_l(t_1)| \le \kappa_1U_0`. For :math:`0 \le
a \le U` and :math:`a' = \max(a, \rho U/\lambda_1) \le U`, :math:`g(s) = e^{-\lambda_1 s}(a' +
U(e^{\rho s} - 1))` has :math:`g' = e^{-\lambda_1 s}(\lambda_1(U - a') - (\lambda_1 - \rho)U
e^{\rho s}) \le e^{-\lambda_1 s}(\rho U - \lambda_1 a') \le 0`, so :math:`e^{-\lambda_1
s}|\varphi_1^\top B u_l(t)| \le g(s) \le g(0) = a' \le \hat p_l`; likewise :math:`e^{-\lambda_1
s}|u_l^\top B\varphi_1| \le \hat q_l` and :math:`e^{-\lambda_1 s}\|u_l\|_* \le \hat a_l`. (2)
Writing :math:`x_j = e^{\lambda_1 t}\alpha_j\varphi_1 + u_j`, for :math:`i \in T_+` and
:math:`j \in O_+`: :math:`S_{ii} - S_{ij} = x_i^\top B(x_i - x_j) = e^{2\lambda_1 t}
c\,\alpha_i(\alpha_i - \alpha_j) + e^{\lambda_1 t}[\alpha_i \varphi_1^\top B(u_i - u_j) +
(\alpha_i - \alpha_j) u_i^\top B\varphi_1] + u_i^\top B(u_i - u_j)`. Let :math:`t^*` be the
supremum of the :math:`t \ge t_1` such that the bounds :math:`\alpha \ge \mu_+` on :math:`T_+`
and :math:`\alpha \le -\mu_-` on :math:`T_-` hold on :math:`[t_1, t]` (both sides at once;
:math:`t^* > t_1` by continuity, the inequalities being strict at :math:`t_1`). On :math:`[t_1,
t^*)`: :math:`\alpha_i \ge \mu_+` and :math:`-\alpha_j \ge \nu_j`, so :math:`\alpha_i(\alpha_i -
\alpha_j) \ge \mu_+(\mu_+ + \nu_j)`; :math:`0 < \alpha_i \le A_+`, :math:`0 \le \alpha_i -
\alpha_j \le \delta`, :math:`|u^\top B v| \le \kappa_3\|u\|_*\|v\|_*`, and (1'') bounds the rest
by :math:`e^{\lambda_1 t}e^{\lambda_1 s}(A_+(\hat p_i + \hat p_j) + \delta\hat q_i) +
e^{2\lambda_1 s}\kappa_3\hat a_i(\hat a_i + \hat a_j)`: :math:`S_{ii} - S_{ij} \ge e^{2\lambda_1
s} G_+`. Hence :math:`\sum_{j \in O_+} P_{ij} \le |O_+| e^{-G_+ e^{2\lambda_1 s}}` (:math:`P_{ij}
\le P_{ij}/P_{ii} = e^{S_{ij} - S_{ii}}`); for the :math:`i \in T_+` realising
:math:`\min_{T_+}\alpha`, :math:`\dot\alpha_i \ge -\lambda_1 \delta \sum_{j\in O_+} P_{ij}` (the
terms :math:`j \in T_+` are :math:`\ge 0`), and :math:`\int_0^\infty \lambda_1 e^{-G
e^{2\lambda_1 s}} ds \le e^{-G}/(2G)`: on :math:`[t_1, t^*)`, :math:`\min_{T_+}\alpha` loses at
most :math:`\delta|O_+| e^{-G_+}/(2G_+)`, strictly less than allowed; likewise :math:`T_-`. If
:math:`t^* < \infty`, both bounds would hold with room at :math:`t^*` and beyond it by
continuity — so :math:`t^* = \infty`. (3) :math:`M = \max_{T_+}\alpha` decreases; :math:`m =
\min_{T_+}\alpha` plus the integrable leakage increases; both converge. If :math:`\lim(M - m) =
\sigma > 0`, then for :math:`k` with :math:`\alpha_k = M` the dominant term :math:`e^{2\lambda_1
t}c\,\alpha_i(\alpha_k - \alpha_j)` of :math:`S_{ik} - S_{ij}`, with :math:`\alpha_i \ge \mu_+`
and :math:`\alpha_k - \alpha_j \ge \sigma/4`, beats the :math:`O(e^{(\lambda_1+\rho)t})` rest,
so the token realising :math:`m` puts weight :math:`\to 1` on tokens with :math:`\alpha \ge m +
\sigma/4` (those of :math:`O_+` have :math:`\alpha \le 0 < m`) and :math:`\dot m \ge \lambda_1
\sigma/8` eventually — impossible. So all of :math:`T_+` converges to :math:`b`; likewise
:math:`T_-`. ∎

Example — :math:`V = \operatorname{diag}(1, -\tfrac12)`, :math:`Q = K = I`, both tokens on the
side :math:`\varphi_1^* > 0` at :math:`t_1 = 0`: no outsider, so no dominance is needed even
though the two tokens' scores are far from the :math:`\varphi_1`-direction's::

    >>> from fractions import Fraction as F
    >>> from flint import arb_mat
    >>> from verify.lemmas._instance import read_instance
    >>> inst = read_instance({"instance": {"V": [["1", "0"], ["0", "-1/2"]],
    ...     "Q": [["1", "0"], ["0", "1"]], "K": [["1", "0"], ["0", "1"]],
    ...     "x0": [["1", "5"], ["1/2", "-5"]], "model": {"form": "z", "beta": "1",
    ...     "attention": "softmax", "mask": "full", "normalisation": "none"}}})
    >>> report = check(inst, F(0), arb_mat([[1, 5], [0.5, -5]]), [],
    ...                {"T": [["1", "0"], ["0", "1"]], "zero": [], "mu_plus": "1/4"})
    >>> report.holds, [q.name for q in report.inequalities]
    (True, ['good-triple', 'spectral-gap', 'trap-plus'])

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import acb_mat, arb, arb_mat

from verify.lemmas._balls import CheckFailure, LemmaReport, ball_text, dot, exact, rational

__all__ = ["ID", "check", "trap", "leading_eigenpair"]

ID = "good-triple"


def leading_eigenpair(V: list) -> tuple[arb, list, list]:
    """``(λ1, φ1, φ1*)`` in balls, certified real, simple and dominant (``λ1 > |λ_k|``), from
    python-flint's rigorous eigen-decomposition of the exact ``V``; raises
    :class:`CheckFailure` otherwise. ``φ1`` is normalised to 1 in its largest entry and
    ``φ1*(φ1) = 1``."""
    d = len(V)
    try:
        values, left, right = acb_mat([[exact(v) for v in row] for row in V]).eig(
            left=True, right=True)
    except (ValueError, ZeroDivisionError) as exc:
        raise CheckFailure(f"the eigenvalues of V are not isolated ({exc}).") from None
    k = max(range(d), key=lambda j: float(values[j].real.mid()))
    lam = values[k]
    mirror = lam.conjugate()
    if any(values[j].overlaps(mirror) for j in range(d) if j != k):
        raise CheckFailure("λ1 is not certified real (its conjugate ball meets another "
                           "eigenvalue).")
    lam1 = lam.real
    if not lam1 > 0:
        raise CheckFailure(f"λ1 = {lam1} is not certified positive.")
    if any(not lam1 > abs(values[j]) for j in range(d) if j != k):
        raise CheckFailure("λ1 is not certified to dominate the other eigenvalues in modulus.")
    column = [right[a, k] for a in range(d)]
    p = max(range(d), key=lambda a: float(abs(column[a]).mid()))
    pivot = column[p]
    phi = [(v / pivot).real for v in column]
    phi_star = [(left[k, a] * pivot).real for a in range(d)]
    return lam1, phi, phi_star


def _norm(v: list) -> arb:
    """An upper bound of the Euclidean norm :math:`|v|_2`, from the balls' largest moduli: exact
    at 0 (a ball around 0 squared by ``x * x`` contains negative numbers, whose square root is
    NaN).

    >>> from flint import arb
    >>> _norm([arb(3), arb(0, 1e-30)]) >= 3, _norm([arb(0, 1e-30)] * 2).is_finite()
    (True, True)
    """
    return sum((arb(abs(x).upper()) ** 2 for x in v), arb(0)).sqrt().upper()


def _two_norm_bound(M: arb_mat) -> arb:
    """An upper bound of the spectral norm: ``sqrt(‖MᵀM‖_∞)`` (Gershgorin)."""
    G = M.transpose() * M
    return max(sum((abs(v) for v in row), arb(0)).upper() for row in G.tolist()).sqrt().upper()


def _vec(M: arb_mat, v: list) -> list:
    return [sum((M[a, b] * v[b] for b in range(len(v))), arb(0)) for a in range(M.nrows())]


def check(inst, t1: Fraction, z: arb_mat, symmetries: list, parameters: dict) -> LemmaReport:
    """Check the lemma on the balls ``z`` (rescaled tokens at ``t1``), with the verified
    ``symmetries`` and the certificate's ``parameters``: ``T`` (rational ``d×d``), ``mu_plus``,
    ``mu_minus`` (rationals), ``zero`` (tokens claimed on ``{φ1* = 0}`` by symmetry)."""
    return trap(inst, t1, z, symmetries, parameters)[0]


def trap(inst, t1: Fraction, z: arb_mat, symmetries: list,
         parameters: dict) -> tuple[LemmaReport, dict]:
    r""":func:`check`, and the bounds it used (balls; the lemma ``hyperplane-drift`` builds on
    them): ``lam1``, ``phi``, ``phi_star``, ``B``, ``T``, ``U0``, ``a_hat`` (per token:
    :math:`\hat a_l \ge e^{-\lambda_1 s}\|u_l(t_1 + s)\|_*` for all ``s ≥ 0``), ``spread``,
    ``E`` (``e^{t1 V}``), ``sides`` (``{"plus"/"minus": (members, sign, mu, G)}``, where
    ``G > 0``, or ``None`` for a side without outsiders)."""
    if inst.form != "z" or inst.plain():
        raise CheckFailure(f"lemma {ID} is about the rescaled plain model (form 'z', one softmax "
                           f"head, full attention); this instance has {', '.join(inst.plain())}.")
    report = LemmaReport(ID)
    n, d = inst.n, inst.d
    lam1, phi, phi_star = leading_eigenpair(inst.V)
    B = arb_mat([[exact(v) for v in row] for row in inst.B])
    Bphi = _vec(B, phi)
    c = sum((u * v for u, v in zip(phi, Bphi, strict=True)), arb(0))
    report.require("good-triple", c, "<Qφ1, Kφ1> > 0 (Definition 4.1)")
    try:
        T = arb_mat([[exact(rational(v)) for v in row] for row in parameters["T"]])
        zero = [int(i) for i in parameters.get("zero", [])]
    except (KeyError, TypeError, ValueError):
        raise CheckFailure(f"lemma {ID} needs parameters T (rational d×d), mu_plus, "
                           "mu_minus, zero.") from None
    T_inv = T.inv()
    V = arb_mat([[exact(v) for v in row] for row in inst.V])
    pi_W = arb_mat([[(1 if a == b else 0) - phi[a] * phi_star[b] for b in range(d)]
                    for a in range(d)])
    rho = _two_norm_bound(T_inv * V * pi_W * T)
    report.require("spectral-gap", lam1 - rho, "ρ ≥ ‖T⁻¹ V π_W T‖₂ stays below λ1")
    for j in zero:
        ok = any(pi[j] == j and all(
            (sum((S[b][a] * phi_star[b] for b in range(d)), arb(0)) + phi_star[a]).contains(0)
            for a in range(d)) and not all(
            (sum((S[b][a] * phi_star[b] for b in range(d)), arb(0)) - phi_star[a]).contains(0)
            for a in range(d)) for S, pi in symmetries)
        if not ok:
            raise CheckFailure(f"token {j} is not held on {{φ1* = 0}} by a verified symmetry.")
    rows = [[z[i, a] for a in range(d)] for i in range(n)]
    alpha = [sum((p * v for p, v in zip(phi_star, row, strict=True)), arb(0)) for row in rows]
    plus = [i for i in range(n) if i not in zero and alpha[i] > 0]
    minus = [i for i in range(n) if i not in zero and alpha[i] < 0]
    undecided = [i for i in range(n) if i not in zero and i not in plus and i not in minus]
    if undecided:
        raise CheckFailure(f"the sign of φ1*(z_i(t1)) is not certified for tokens "
                           f"{undecided}.")
    E = (V * exact(t1)).exp()
    X = [_vec(E, row) for row in rows]
    U = [_vec(pi_W, x) for x in X]  # u_l = π_W x_l
    norms = [_norm(_vec(T_inv, u)) for u in U]
    U0 = max(norms)
    values = [a for i, a in enumerate(alpha) if i not in zero] + [arb(0)] * len(zero)
    top = max(v.upper() for v in values)
    bottom = min(v.lower() for v in values)
    spread = arb(top) - arb(bottom)
    Tt = T.transpose()
    Btphi = _vec(B.transpose(), phi)
    kappa1 = _norm(_vec(Tt, Btphi))
    kappa2 = _norm(_vec(Tt, Bphi))
    kappa3 = sum((v * v for v in (Tt * B * T).entries()), arb(0)).sqrt().upper()
    # per token, bounds of e^{-λ1 s}|·| for all s ≥ 0 (step 1'' of the proof):
    # max(value at t1, (ρ/λ1) · its Cauchy-Schwarz bound)
    ratio = (rho / lam1).upper()
    a_hat = [max(a, (ratio * U0).upper()) for a in norms]
    p_hat = [max(abs(dot(Btphi, u)).upper(), (ratio * kappa1 * U0).upper()) for u in U]
    q_hat = [max(abs(dot(Bphi, u)).upper(), (ratio * kappa2 * U0).upper()) for u in U]
    grow1, grow2 = (lam1 * exact(t1)).exp(), (2 * lam1 * exact(t1)).exp()
    sides, mus = {}, {}
    bounds = {"lam1": lam1, "phi": phi, "phi_star": phi_star, "B": B, "T": T, "U0": U0,
              "a_hat": a_hat, "spread": spread, "E": E, "sides": {}}
    for name, members in (("plus", plus), ("minus", minus)):
        if members:
            try:
                mus[name] = rational(parameters[f"mu_{name}"])
            except KeyError:
                raise CheckFailure(f"lemma {ID} needs mu_{name}.") from None
            if not mus[name] > 0:
                raise CheckFailure(f"mu_{name} = {mus[name]} must be positive.")
    for name, members, sign, other in (("plus", plus, 1, "minus"), ("minus", minus, -1, "plus")):
        if not members:
            continue
        mu = exact(mus[name])
        outsiders = n - len(members)
        lowest = arb(min((sign * alpha[i]).lower() for i in members))
        if outsiders:
            A = arb(top) if sign > 0 else -arb(bottom)
            opposite = set(minus if sign > 0 else plus)
            G = None
            for j in (j for j in range(n) if j not in members):
                # c α_i (α_i - α_j) ≥ c μ (μ + ν_j): ν_j = μ of the other side for its tokens,
                # 0 for a token held at 0
                nu = exact(mus[other]) if j in opposite else arb(0)
                for i in members:
                    pair = (grow2 * c * mu * (mu + nu)
                            - grow1 * (A * (p_hat[i] + p_hat[j]) + spread * q_hat[i])
                            - kappa3 * a_hat[i] * (a_hat[i] + a_hat[j]))
                    G = pair if G is None or pair.lower() < G.lower() else G
            report.require(f"dominance-{name}", G, f"G_{name} > 0: the φ1-direction dominates "
                           "the scores of the tokens on that side over its outsiders")
            if not G > 0:
                continue
            leak = spread * outsiders * (-G).exp() / (2 * G)
        else:
            G, leak = None, arb(0)  # every token on this side: its minimum never decreases
        bounds["sides"][name] = (members, sign, mu, G)
        report.require(f"trap-{name}", lowest - leak - mu,
                       f"the tokens of T_{name} keep |φ1*(z_i)| ≥ μ_{name}")
        sides[name] = {"tokens": members, "mu": str(mus[name]),
                       "limit_within": [ball_text(mu), ball_text(arb(top) if sign > 0
                                                                 else -arb(bottom))]}
    report.conclusions = {"t1": str(t1), "lambda1": ball_text(lam1), "plus": plus,
                          "minus": minus, "zero": zero, "sides": sides,
                          "phi1_star": [ball_text(v) for v in phi_star], "rho": ball_text(rho)}
    return report, bounds
