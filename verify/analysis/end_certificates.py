r"""Certificates that the end of a run will not change: the only grounds for refuting a
statement about ``t → ∞`` from a finite run.

A trend on a window is evidence, never a violation: metastable states look like limits for
exponentially long times (paper.md §4). :func:`certify_end` looks at the last checkpoint of a
successful run and returns a :class:`Certificate` when one of these arguments applies, with the
**certified limit** of every token and its error bound:

``"invariant-point"``
    (autonomous forms) the allowed coordinates at the initial tokens — the tangent space of the
    spheres for post-LN, intersected with the fixed subspace of the exact symmetries the run was
    kept on — reduce to a point: the exact solution cannot move at all, so its limit is the
    exact initial configuration (e.g. an exactly antipodal pair on the circle). Basis
    *certificate*: exact symmetries and exact initial data; nothing is read off the run.
``"stable-equilibrium"``
    (autonomous forms) Newton's method finds an equilibrium :math:`x^*` next to the end state
    :math:`x_T`; its restricted linearisation has every eigenvalue with real part
    :math:`\le -\gamma < -\varepsilon_\rho` except *neutral* ones (:math:`|\mathrm{Re}\,\lambda|
    \le \varepsilon_\rho`), and each neutral direction is tangent to a family of equilibria
    (Newton from :math:`x^* + h v` stays at distance :math:`\le h/100` of it: e.g. the
    rotations of a cluster on the sphere) — a normally attracting set of equilibria; finally
    the end state is in the ball where the linear contraction dominates the quadratic terms,
    :math:`\delta = |x_T - x^*|_\infty \le \gamma / (4M)`, with :math:`M` the second
    derivative of the field measured by central differences. The limit is then
    :math:`x^*` within :math:`\kappa(\delta + r/\gamma)(1 + \|J\|/\gamma)` plus the state's
    error estimate (:math:`\kappa` the condition of the eigenbasis, :math:`r` the Newton
    residual). Basis *evidence*: the equilibrium is found in float64, the spectrum is that of
    a float Jacobian and the curvature :math:`M` is sampled in a few directions — none of it is
    a bound (a rigorous version needs an enclosure of the state, interval Newton and an
    enclosed spectrum: the "proved on this instance" issue).
``"hardmax-leader-map"``
    (rescaled form with :math:`V = \lambda I`, :math:`\lambda > 0`, any :math:`Q^\top K`, one
    softmax head, full attention) at :math:`T` every row's argmax is certified by the score
    error bars and is a *leader* (a token whose own row's argmax is itself), except tokens
    pinned at a point by the exact symmetries. Under the hardmax flow the leaders stay, and a
    follower :math:`i` of :math:`\ell` moves as :math:`z_i(s) = (1 - w) z_i + w z_\ell`,
    :math:`w = 1 - e^{-\lambda s}`, the same :math:`w` for all followers; every score gap of row
    :math:`i` is then :math:`(1-w)^2 A + w(1-w) B + w^2 C` with :math:`A, B, C` certified
    gaps at :math:`T` (:math:`\ge 0`, :math:`A \ge g`), so the argmax never changes and the
    gap stays :math:`\ge (1 - w) g`. The softmax differs from the hardmax by weights
    :math:`\le (n-1) \exp(-e^{2\lambda t}(1-w) g)`, which move any token by at most
    :math:`R = (n-1) D e^{-u}/u`, :math:`u = e^{2\lambda T} g` (:math:`D` the diameter); the
    certificate requires :math:`4\|B\| |z|_\infty R \le g/2` so that this cannot close a
    margin. Each token's limit is its leader's position at :math:`T` within the leader's
    error estimate plus :math:`R`. Basis *estimate*: the lemma is rigorous, but its hypotheses
    are checked on the run's scores within their estimated error (times the measured safety
    factor, :meth:`~verify.flow.trajectory.Trajectory.score_radius`), not on an enclosure.

Two more arguments bear on specific statements: :func:`degenerate_equilibrium` (the approach
looks algebraic: no exponential rate; basis *evidence*, a two-window rate fit) and
:func:`linear_flow` (a token on the linear flow :math:`e^{tV}x(0)` that rotates or grows: no
convergence; basis *certificate*, decided in exact arithmetic).

Every certificate states its :class:`~verify.claim.Basis` (``Certificate.basis``, and
``"basis"`` in its plain form); a decision resting on it is never stronger
(:func:`verify.judge.decide`). Only a certificate on a rigorous basis can refute a claim.

Nothing else certifies: for a general ``V`` in the rescaled form (whose field depends on
:math:`t`), for several heads, masks or an MLP, a violation of an asymptotic statement stays
*inconclusive* (and the horizon is extended).

Examples
--------
An exactly antipodal pair on the circle, kept on its invariant set, cannot move:

>>> from verify.model import Instance, Model
>>> from verify.flow.simulate import simulate
>>> m = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere")
>>> inst = Instance(m, [[1, 0], [-1, 0]])
>>> cert, why = certify_end(inst, simulate(inst, 5, checkpoints=6))
>>> cert.kind, cert.limit.tolist()
('invariant-point', [[1.0, 0.0], [-1.0, 0.0]])

Three tokens with :math:`V = Q = K = I` in the rescaled form: the two leaders and the follower's
limit are certified.

>>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], ["3/2", "1/2"]])
>>> cert, why = certify_end(inst, simulate(inst, 8, checkpoints=9))
>>> cert.kind, cert.data["leader_of"]
('hardmax-leader-map', [0, 1, 0])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.analysis.equilibria import (
    NEWTON_TOL,
    autonomous_field,
    coordinate_basis,
    enforced_group,
    find_equilibrium,
    linearisation,
    retract,
)
from verify.analysis.evidence import Basis
from verify.analysis.graph import certified_argmax, score_bounds
from verify.analysis.observed_limits import coincide, fit_exponential_convergence
from verify.digits import upper
from verify.exact.eigenvalues import spectrum
from verify.exact.inputs import as_float_array
from verify.numerics import CONVERSION_ULPS, ulps

__all__ = ["Certificate", "certify_end", "leader_map_at", "degenerate_equilibrium",
           "linear_flow", "pinned_subspaces", "FAMILY_TOLERANCE"]

#: A neutral direction ``v`` is tangent to a family of equilibria when Newton's method from
#: ``x* + h v`` stops within ``FAMILY_TOLERANCE · h`` of that point.
FAMILY_TOLERANCE = 1e-2
#: Step (relative to the size of the state) for the family test and the second derivative.
PROBE_STEP = 1e-4


@dataclass(frozen=True)
class Certificate:
    """Why the end of a run will not change, and the certified limit of the tokens.

    Attributes
    ----------
    kind : str
        ``"invariant-point"``, ``"stable-equilibrium"`` or ``"hardmax-leader-map"``.
    statement : str
        The argument, in one or two sentences, with its numbers.
    variable : str
        The tokens the limit is about (``"x"`` for autonomous runs, ``"z"`` for rescaled).
    time : float
        The checkpoint it was read at.
    limit : ndarray, shape (n, d)
        The certified limit of every token.
    limit_error : ndarray, shape (n,)
        Max-norm error bound of each token's limit.
    basis : Basis
        What the argument rests on (module docstring).
    data : dict
        Small plain data (rates, leaders, ...).
    """

    kind: str
    statement: str
    variable: str
    time: float
    limit: np.ndarray
    limit_error: np.ndarray
    basis: Basis
    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain data for a result's ``certificate`` field."""
        return {"kind": self.kind, "statement": self.statement, "variable": self.variable,
                "time": self.time, "basis": self.basis.value,
                "largest_limit_error": float(np.max(self.limit_error)), **self.data}


def certify_end(instance, trajectory) -> tuple[Certificate | None, str]:
    """The certificate of the run's end state, or ``(None, why there is none)``.

    See the module docstring for the three arguments and what each requires.
    """
    if trajectory.error is None or not trajectory.success:
        return None, "the run has no error estimate."
    model = instance.model
    if model.rescaled:
        return leader_map_at(instance, trajectory)
    return _equilibrium(instance, trajectory)


# --------------------------------------------------------------------------- symmetry
def pinned_subspaces(instance, trajectory) -> list[np.ndarray] | None:
    """Per token, an orthonormal basis (``d × r_i``) of the coordinates it may take on the
    fixed subspace of the exact symmetries the run was kept on (``None`` without symmetry).
    ``r_i = 0``: the token is pinned at 0 forever.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> from verify.flow.simulate import simulate
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 1], [-1, 1], [-1, -1], [1, -1], [0, 0]])
    >>> [A.shape[1] for A in pinned_subspaces(inst, simulate(inst, 1, checkpoints=2))]
    [1, 1, 1, 1, 0]
    """

    group = enforced_group(instance, trajectory)
    if group is None:
        return None
    n, d = instance.n, instance.d
    columns: list[list[np.ndarray]] = [[] for _ in range(n)]
    for members, zero in group.orbits():
        if zero:
            continue
        vectors: dict[int, np.ndarray] = {}
        for i, c, s in members:
            vectors.setdefault(i, np.zeros(d))[c] = s
        for i, v in vectors.items():
            columns[i].append(v)
    out = []
    for cols in columns:
        if not cols:
            out.append(np.zeros((d, 0)))
            continue
        U, s, _ = np.linalg.svd(np.array(cols).T, full_matrices=False)
        out.append(U[:, s > 0.5])
    return out


# --------------------------------------------------------------------------- rescaled form
def _scalar_value_matrix(model) -> Fraction | None:
    """``λ`` when ``V = λ I`` exactly with ``λ > 0``, else ``None``."""
    V = model.V
    d = V.shape[0]
    lam = V[0, 0]
    if lam <= 0 or any(V[a, b] != (lam if a == b else 0) for a in range(d) for b in range(d)):
        return None
    return Fraction(lam)


def _residual_text(residual: float, log_u: float) -> str:
    """The residual motion bound ``(n−1)·diam·exp(−u)/u`` in words: a number, or how small it
    is once ``u = e^{log_u}`` puts it below float64's range (it is never 0)."""
    if residual > 0:
        return upper(residual)
    if math.isinf(log_u):
        return "0 (the softmax is exactly its hardmax)"
    return f"(n − 1)·diam·exp(−u)/u with u = e^({log_u:.4g}), far below 10⁻³⁰⁰"


def leader_map_at(instance, traj, k: int = -1) -> tuple[Certificate | None, str]:
    """The ``hardmax-leader-map`` certificate read at checkpoint ``k`` (module docstring), or
    ``(None, why not)``; :mod:`verify.predict` scans for the first checkpoint where it holds."""
    model = instance.model
    if model.departures():
        return None, ("a certified leader map is a certificate only for the model (1.1) (one "
                      "softmax head, full attention, no MLP); this one has "
                      f"{', '.join(model.departures())}.")
    lam = _scalar_value_matrix(model)
    if lam is None:
        return None, ("the rescaled field depends on t and V is not λI (λ > 0): no "
                      "certificate that the end will not change is available for this V.")
    k = k % len(traj.times)
    S = np.asarray(traj.scaled_scores[k], dtype=float)
    radius = np.broadcast_to(np.asarray(traj.score_radius(k), dtype=float), S.shape)
    if not (np.all(np.isfinite(S)) and np.all(np.isfinite(radius))):
        return None, "the scores at the end have no finite error bound."
    n = instance.n
    z = np.asarray(traj.z[k], dtype=float)
    error = np.asarray(traj.error[k], dtype=float)
    # tokens within their errors of each other sit at one point (merged): never competitors
    same = coincide(z, error)
    pinned = pinned_subspaces(instance, traj)
    fixed = {i for i in range(n) if pinned is not None and pinned[i].shape[1] == 0}
    lo, hi = score_bounds(S, radius)
    argmax, gaps = {}, {}
    for i in range(n):
        if i in fixed:
            continue
        top = int(np.argmax(S[i]))
        others = [j for j in range(n) if not same[top, j]]
        if not others:
            argmax[i], gaps[i] = top, math.inf
            continue
        gap = min(S[i, top] - S[i, j] - radius[i, top] - radius[i, j] for j in others)
        # the one leader-map rule decides; the margin (it sizes the residual below) must be > 0
        certain, _ = certified_argmax(lo[i], hi[i], same)
        if top not in certain or not gap > 0:
            return None, (f"the argmax of row {i + 1} is not certified at t = "
                          f"{float(traj.times[k]):.4g} (score margin within its error).")
        argmax[i], gaps[i] = top, gap
    leaders = {i for i, top in argmax.items() if same[top, i]}
    for i, top in argmax.items():
        if not any(same[top, m] for m in leaders | fixed):
            return None, (f"token {i + 1} follows token {top + 1}, which is not a leader (it "
                          "follows another token): the leader map is not settled yet.")
    g = min(gaps.values(), default=math.inf)
    diameter = float(np.max(np.linalg.norm(z[:, None] - z[None], axis=2)))
    log_u = float(traj.log_scale[k]) + math.log(g) if math.isfinite(g) else math.inf
    residual = 0.0 if log_u > 700 else (n - 1) * diameter * math.exp(-math.exp(log_u)) \
        / math.exp(log_u)
    B = as_float_array(model.B)
    lever = 4 * float(np.linalg.norm(B, 2)) * float(np.max(np.abs(z))) * residual
    if not lever <= g / 2:
        return None, (f"the softmax is not yet close enough to its hardmax (residual motion "
                      f"bound {residual:.3g}); the margins could still close.")
    leader_of = [argmax.get(i, i) for i in range(n)]
    limit = z[leader_of]
    limit_error = error[leader_of] + residual
    time = float(traj.times[k])
    statement = (f"at t = {time:.4g} every row's argmax is certified (smallest scaled margin "
                 f"{g:.3g}) and points at one of {len(leaders)} leader(s)"
                 + (f" or is pinned by the exact symmetries ({len(fixed)} token(s))" if fixed
                    else "") +
                 f"; with V = {lam}·I the leader map persists for all t (gaps are convex "
                 f"combinations of certified gaps) and the residual soft attention moves any "
                 f"token by at most {_residual_text(residual, log_u)}.")
    return Certificate("hardmax-leader-map", statement, "z", time, limit, limit_error,
                       Basis.ESTIMATE, {"leader_of": leader_of, "leaders": sorted(leaders),
                        "pinned": sorted(fixed), "smallest_margin": g,
                        "residual": residual}), ""


# --------------------------------------------------------------------------- autonomous forms
@dataclass
class _Linearised:
    """The end state, the equilibrium next to it and its restricted linearisation."""

    x_T: np.ndarray
    x_star: np.ndarray
    residual: float
    basis: np.ndarray
    text: str
    J: np.ndarray
    rho: float
    rate_error: float
    key: np.ndarray
    neutral: np.ndarray
    vectors: np.ndarray
    degenerate: list


def _linearise(instance, traj) -> tuple[_Linearised | None, str]:
    x_T = np.asarray(traj.state[-1], dtype=float)
    if not np.all(np.isfinite(x_T)):
        return None, "the last state is not finite."
    group = enforced_group(instance, traj)
    x_star, residual, ok = find_equilibrium(instance, x_T, group=group)
    if not ok:
        return None, (f"the end state is not next to an equilibrium (Newton's residual "
                      f"{residual:.2g}): it is still moving.")
    B, text = coordinate_basis(instance, x_star, group)
    if B.shape[1] == 0:
        empty = np.zeros((0, 0))
        return _Linearised(x_T, x_star, residual, B, text, empty, math.nan, 0.0, np.zeros(0),
                           np.zeros(0, dtype=bool), empty, []), ""
    model = instance.model
    h_layer = float(model.h) if model.discrete else None
    J, _, rho, err, eig, text = linearisation(instance, x_star, group, h_layer)
    _, vectors = np.linalg.eig(J)
    with np.errstate(divide="ignore"):
        key = np.log(np.abs(eig)) / h_layer if h_layer else eig.real
    neutral = np.abs(key) <= err
    degenerate = []
    for index in np.flatnonzero(neutral):
        v = vectors[:, index]
        for part in (v.real, v.imag):
            if np.linalg.norm(part) and not _is_family(instance, x_star, B, part, group):
                degenerate.append(part / np.linalg.norm(part))
    return _Linearised(x_T, x_star, residual, B, text, J, rho, err, key, neutral, vectors,
                       degenerate), ""


def _is_family(instance, x_star, B, direction, group) -> bool:
    """Whether the equilibria continue along ``direction`` (``B``-coordinates): at the steps
    ``s = PROBE_STEP·scale·(1, 100)`` along it, Gauss-Newton over the transverse allowed
    coordinates must bring ``|Bᵀ f|`` down to Newton's tolerance. Along a family it does; along
    a centre manifold (``f ~ c s³`` in the direction itself, which no transverse move cancels)
    the residual stays and grows with ``s``."""

    f = autonomous_field(instance)
    v = direction / np.linalg.norm(direction)
    Q, _ = np.linalg.qr(np.column_stack([v, np.eye(len(v))]))
    across = B @ Q[:, 1:len(v)]
    scale = max(1.0, float(np.max(np.abs(x_star))))
    h = PROBE_STEP * scale
    for s in (h, 100 * h):
        x = retract(instance, x_star + s * (B @ v).reshape(x_star.shape), group)
        for _ in range(30):
            g = B.T @ f(x).ravel()
            if across.shape[1] == 0:
                break
            cols = [(B.T @ (f(x + h * c.reshape(x.shape)) - f(x - h * c.reshape(x.shape)))
                     .ravel()) / (2 * h) for c in across.T]
            u = np.linalg.lstsq(np.array(cols).T, -g, rcond=1e-12)[0]
            x = retract(instance, x + (across @ u).reshape(x.shape), group)
        residual = float(np.max(np.abs(B.T @ f(x).ravel())))
        if residual > NEWTON_TOL * (1.0 + scale * float(np.max(np.abs(f(x))) / max(s, h))):
            return False
    return True


def _equilibrium(instance, traj) -> tuple[Certificate | None, str]:
    lin, why = _linearise(instance, traj)
    if lin is None:
        return None, why
    time = float(traj.times[-1])
    state_error = float(np.max(traj.error[-1]))
    delta = float(np.max(np.abs(lin.x_T - lin.x_star)))
    n = instance.n
    if lin.basis.shape[1] == 0:
        return _invariant_point(instance, traj, lin.text)
    if lin.rho > lin.rate_error:
        return None, (f"the nearby equilibrium is unstable (rate {lin.rho:.3g} > its error "
                      f"{lin.rate_error:.2g}): metastable, not a limit.")
    if lin.degenerate:
        return None, (f"the equilibrium at t = {time:.4g} is degenerate: a direction with a "
                      "zero eigenvalue is not a family of equilibria, so the approach may be "
                      "algebraic and the limit is not certified.")
    stable = lin.key[~lin.neutral]
    gamma = float(-np.max(stable)) if stable.size else math.inf
    if stable.size:
        f = autonomous_field(instance)
        B, x_star = lin.basis, lin.x_star
        h = PROBE_STEP * max(1.0, float(np.max(np.abs(x_star))))
        rng = np.random.default_rng(0)
        directions = [B[:, c] for c in range(B.shape[1])][:8] + \
            [B @ rng.normal(size=B.shape[1]) for _ in range(4)]
        f0, second = f(x_star), 0.0
        for u in directions:
            u = (u / np.linalg.norm(u)).reshape(x_star.shape)
            curvature = (f(x_star + h * u) + f(x_star - h * u) - 2 * f0) / (h * h)
            second = max(second, float(np.max(np.abs(B.T @ curvature.ravel()))))
        if not delta * second <= gamma / 4:
            return None, (f"the end state is {delta:.3g} from the equilibrium, outside the "
                          f"ball where its linearisation (rate {gamma:.3g}) dominates the "
                          f"curvature {second:.3g}: not yet trapped.")
    cond = float(np.linalg.cond(lin.vectors))
    if not cond < 1e12:
        return None, "the linearisation at the equilibrium is defective (no eigenbasis)."
    drift = 1.0 + (float(np.max(np.abs(lin.J))) / gamma if lin.neutral.any() and stable.size
                   else 0.0)
    newton = lin.residual / gamma if math.isfinite(gamma) else 0.0
    bound = cond * (delta + newton) * drift + state_error
    statement = (f"at t = {time:.4g} the state is {delta:.3g} from an equilibrium whose "
                 f"linearisation on {lin.text} decays at rate ≥ {gamma:.4g} (error "
                 f"{lin.rate_error:.2g})"
                 + (f", its {int(lin.neutral.sum())} neutral direction(s) being a family of "
                    "equilibria" if lin.neutral.any() else "")
                 + "; the state is inside the ball where the linearisation dominates, so it "
                 f"converges to a point within {bound:.3g} of it.")
    return Certificate("stable-equilibrium", statement, "x", time, lin.x_star,
                       np.full(n, bound), Basis.EVIDENCE,
                       {"rate": gamma, "rate_error": lin.rate_error,
                        "neutral": int(lin.neutral.sum()), "distance": delta,
                        "restricted_to": lin.text}), ""


def _invariant_point(instance, traj, text: str) -> tuple[Certificate | None, str]:
    """The ``invariant-point`` certificate, decided at the exact initial tokens: when the
    allowed coordinates there (the sphere's tangent space and the fixed subspace of the exact
    symmetries) are ``{0}``, the exact solution is the initial configuration forever."""

    x0 = instance.x0_float()
    B, _ = coordinate_basis(instance, x0, enforced_group(instance, traj))
    if B.shape[1] != 0:
        return None, ("the end state is isolated on the allowed set but the initial tokens are "
                      "not: no invariant point.")
    time = float(traj.times[-1])
    statement = (f"on the allowed set ({text}) the initial configuration is an isolated point: "
                 "the exact solution cannot move, so every token's limit is its exact initial "
                 "value.")
    rounding = ulps(CONVERSION_ULPS, np.max(np.abs(x0), axis=1))
    return Certificate("invariant-point", statement, "x", time, x0, rounding,
                       Basis.CERTIFICATE, {"restricted_to": text}), ""


def degenerate_equilibrium(instance, traj) -> dict | None:
    r"""Evidence that the approach to the end state is **algebraic**, as a plain dict (basis
    *evidence*), or ``None``.

    Two routes must agree. (1) The end state is next to an equilibrium :math:`x^*` (autonomous
    forms only; no unstable direction) whose restricted linearisation has *slow* directions —
    eigenvalues with :math:`|\mathrm{Re}\,\lambda|` at most the error :math:`\varepsilon_\rho`,
    or at most :math:`1/T` and a thousandth of the dynamics' own rates (of the Jacobian and of
    ``V``; Newton's method converges only slowly towards a degenerate equilibrium, so the
    linearisation is taken near it) — that are
    not a family of equilibria, and the state has a component along them beyond its error
    estimate. (2) The local exponential rate of :math:`|x(t) - x^*|` fitted on the two halves of
    the last third of the run *decreases* beyond the error bars (for :math:`t^{-p}` the local
    rate is :math:`p/t`). The approach along those directions is then governed by the nonlinear
    terms (a centre manifold): no exponential rate :math:`r > 0` describes it. Both routes
    rest on float64 eigenvalues and on rate fits with thresholds, so this is *evidence*, never
    a refutation: a certified algebraic bound needs the theory's lemma evaluated on an
    enclosure.

    Examples
    --------
    :math:`V = -I`: the tokens collapse to 0 like :math:`t^{-1/2}`.

    >>> from verify.model import Instance, Model
    >>> from verify.flow.simulate import simulate
    >>> inst = Instance(Model(V=[[-1, 0], [0, -1]], form="x"), [[1, 0], [0, 1], [-1, "1/2"]])
    >>> degenerate_equilibrium(inst, simulate(inst, 40, checkpoints=41))["kind"]
    'degenerate-equilibrium'
    """

    if instance.model.rescaled or traj.error is None:
        return None
    lin, _ = _linearise(instance, traj)
    if lin is None or lin.basis.shape[1] == 0 or lin.rho > lin.rate_error:
        return None
    time = float(traj.times[-1])
    scale = max(float(np.max(np.abs(lin.key))),  # the dynamics' own rates: J's and V's
                max(float(np.max(np.abs(np.linalg.eigvals(as_float_array(head.V)))))
                    for head in instance.model.heads))
    slow = (np.abs(lin.key) <= lin.rate_error) | (
        (np.abs(lin.key) <= 1.0 / time) & (np.abs(lin.key) <= 1e-3 * scale))
    if not slow.any():
        return None
    group = enforced_group(instance, traj)
    B = coordinate_basis(instance, lin.x_star, group)[0]
    directions = []
    for v in lin.vectors[:, slow].T:
        for part in (v.real, v.imag):
            if np.linalg.norm(part) and not _is_family(instance, lin.x_star, B, part, group):
                directions.append(B @ (part / np.linalg.norm(part)))
    if not directions:
        return None
    offset = (lin.x_T - lin.x_star).ravel()
    component = float(np.max(np.abs(np.array(directions) @ offset)))
    state_error = float(np.max(traj.error[-1]))
    if not component > math.sqrt(instance.n * instance.d) * state_error:
        return None
    t = traj.t
    distance = np.max(np.abs(np.asarray(traj.state, dtype=float) - lin.x_star), axis=(1, 2))
    errors = np.max(traj.error, axis=1)
    thirds = np.flatnonzero(t >= 2 * time / 3)
    if len(thirds) < 8:
        return None
    half = len(thirds) // 2
    rates = []
    for window in (thirds[:half + 1], thirds[half:]):
        fit = fit_exponential_convergence(t[window], distance[window], errors[window], tail=1.0)
        if not (math.isfinite(fit.rate) and math.isfinite(fit.rate_error)):
            return None
        rates.append((fit.rate, fit.coverage * fit.rate_error))
    (r1, e1), (r2, e2) = rates
    if not r1 - r2 > e1 + e2:
        return None
    return {"kind": "degenerate-equilibrium", "basis": Basis.EVIDENCE.value, "time": time,
            "rate_error": float(e2),
            "local_rates": [float(r1), float(r2)],
            "statement": (f"at t = {time:.4g} the state is {float(np.max(np.abs(offset))):.3g} "
                          f"from an equilibrium whose linearisation on {lin.text} has "
                          f"{len(directions)} slow direction(s) that are not a family of "
                          f"equilibria, with a component {component:.3g} of the state along "
                          f"them (beyond its error {state_error:.2g}); the local decay rate of "
                          f"|x(t) − x*| falls from {r1:.3g} to {r2:.3g} (beyond the error bars "
                          f"{e1:.2g}, {e2:.2g}) across the last third of the run: the approach "
                          "is algebraic, not exponential.")}


def linear_flow(instance, traj) -> dict | None:
    r"""A certificate that the tokens do **not** converge, as a plain dict, or ``None``.

    When every token sits at the same point (``n = 1``, or identical tokens; one head, no
    normalisation, no MLP, the token form), the attention is uniform over copies of one point
    and the flow is linear: :math:`x(t) = e^{tV} x(0)` exactly. Let :math:`p` be the local
    minimal polynomial of :math:`x(0)` (the monic :math:`p` of least degree with
    :math:`p(V)\,x(0) = 0`, from the exact Krylov sequence). Then :math:`x(t)` converges iff
    every root of :math:`p` has :math:`\mathrm{Re}\,\lambda < 0`, except a simple root 0.
    A root with :math:`\mathrm{Re}\,\lambda > 0` makes the token grow, a nonzero root with
    :math:`\mathrm{Re}\,\lambda = 0` makes it turn at constant speed, a multiple root 0 makes
    it drift: each is decided exactly (the signs of the real parts are certified by
    :func:`verify.exact.eigenvalues.spectrum` on the companion matrix of each factor of
    :math:`p` over :math:`\mathbb{Q}`); an undecided sign gives no certificate.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> from verify.flow.simulate import simulate
    >>> inst = Instance(Model(V=[[0, -1], [1, 0]], form="x"), [[1, 0]])
    >>> linear_flow(inst, simulate(inst, 6, checkpoints=7))["kind"]
    'linear-flow'
    >>> slow = Instance(Model(V=[["-1/10000000000", -1], [1, "-1/10000000000"]], form="x"),
    ...                 [[1, 0]])
    >>> linear_flow(slow, simulate(slow, 6, checkpoints=7)) is None  # a slow inward spiral
    True
    """
    model = instance.model
    if not model.continuous_tokens or not model.single_head or model.normalised \
            or model.has_mlp:
        return None
    if np.any(instance.x0 != instance.x0[0]):
        return None
    found = _non_decaying_root(model.V, instance.x0[0])
    if found is None:
        return None
    root, what = found
    return {"kind": "linear-flow", "basis": Basis.CERTIFICATE.value,
            "time": float(traj.times[-1]), "root": root,
            "statement": (f"all tokens sit at one point, so the attention is uniform over its "
                          f"copies and x(t) = e^(tV) x(0) exactly; the local minimal polynomial "
                          f"of x(0) has the root {root} (exact), so the token {what} forever "
                          "and does not converge.")}


def _non_decaying_root(V, x0) -> tuple[str, str] | None:
    """A root of the local minimal polynomial of ``x0`` that keeps ``e^{tV} x0`` from
    converging, with what it does (``"grows"``, ``"turns"``, ``"drifts"``), or ``None`` (it
    converges, or a sign is undecided)."""
    import sympy


    V = sympy.Matrix(V.tolist())
    krylov = [sympy.Matrix(list(x0))]
    while sympy.Matrix.hstack(*krylov, V * krylov[-1]).rank() > len(krylov):
        krylov.append(V * krylov[-1])
    c = sympy.Matrix.hstack(*krylov).solve_least_squares(V * krylov[-1])  # exact: in the span
    lam = sympy.Symbol("lambda")
    p = sympy.Poly(lam ** len(krylov) - sum(c[j] * lam ** j for j in range(len(krylov))), lam)
    for factor, power in p.factor_list()[1]:
        coefficients = factor.monic().all_coeffs()[::-1]  # a_0, ..., a_{k-1}, 1
        k = len(coefficients) - 1
        if k == 1 and coefficients[0] == 0:  # the root 0
            if power > 1:
                return "0", "drifts"
            continue
        companion = [[1 if i == j + 1 else 0 for j in range(k)] for i in range(k)]
        for i in range(k):
            companion[i][k - 1] = -Fraction(int(coefficients[i].p), int(coefficients[i].q))
        for eigenvalue in spectrum(companion).eigenvalues:
            sign = eigenvalue.real_part_sign
            if sign is None:
                return None
            if sign >= 0:
                return str(eigenvalue), "grows" if sign > 0 else "turns"
    return None
