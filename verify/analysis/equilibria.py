r"""Equilibria of the autonomous dynamics and the classification of a run's end state.

A run that stalls is not yet a limit: it may sit near an *unstable* equilibrium and leave it
later (metastability, paper.md §4). :func:`classify_end_state` looks at the last checkpoint
:math:`x_T` of an autonomous run (``form="x"``: :math:`\dot x = f(x)`; ``form="discrete"``:
:math:`x[k+1] = \Phi(x[k]) = x[k] + h f(x[k])`), and

1. solves :math:`f(x^*) = 0` by Newton's method from :math:`x_T` (:func:`find_equilibrium`;
   minimum-norm steps, so non-isolated equilibria — rotations on the sphere — are fine);
2. calls :math:`x^*` *near* when :math:`|x_T - x^*|_\infty \le` ``NEAR_FRACTION`` ·
   :math:`\max(|x_T|_\infty, |x(0)|_\infty)`; otherwise, or if Newton fails, the state is
   ``"moving"``;
3. linearises at :math:`x^*` on the *allowed coordinates*: an orthonormal basis :math:`B` of the
   tangent space of :math:`(S^{d-1})^n` (``normalisation="sphere"``: radial directions are not
   part of the dynamics) intersected, when the run was kept on the fixed subspace :math:`F` of
   exact symmetries (``trajectory.symmetry``), with :math:`F` — the exact flow never leaves
   :math:`F`, so a direction transverse to it is no instability *of this instance*;
4. computes :math:`J_B = B^\top Df(x^*) B` by central differences at steps :math:`h` and
   :math:`2h` (:func:`jacobian`) and the top rate :math:`\rho = \max_k \operatorname{Re}\lambda_k`
   (discrete: :math:`\rho = \max_k \log|\mu_k| / h` with :math:`\mu_k` the eigenvalues of the
   layer map's Jacobian :math:`I + h J_B`, so that :math:`\rho > 0 \iff |\mu| > 1` and
   :math:`\rho` is a rate per unit time like the continuous one);
5. decides ``"metastable"`` iff :math:`\rho > \varepsilon_\rho` and ``"stable"`` iff
   :math:`\rho \le \varepsilon_\rho` (neutral directions such as rotations of the sphere are not
   unstable), ``"undecided"`` when the error is not finite or the Jacobian is not reproducible
   (entry error above ``JACOBIAN_RELIABLE`` · :math:`\max(|J|_\infty, 1/T)`: e.g. a hardmax
   tie, where the field jumps).

The error :math:`\varepsilon_\rho` adds three routes: (a) :math:`|\rho(J_h) - \rho(J_{2h})|`;
(b) a Bauer–Fike-type bound :math:`\max_k s_k \cdot r \cdot e_J` with :math:`s_k` the
eigenvalue condition numbers, :math:`r` the dimension and :math:`e_J` the entry error of the
Jacobian (the two-step difference plus the rounding of the field, measured by jitter, plus the
eigensolver's :math:`r\,\epsilon\,|J|`); (c) the Newton residual's effect: :math:`\rho` at
:math:`x^*` minus :math:`\rho` one more Newton step away.

``form="z"`` (rescaled tokens) has a time-dependent field: its end state is ``"not-autonomous"``
(trend fits decide there, :mod:`verify.analysis.observed_limits`).

Examples
--------
Two tokens on the circle, antipodal, slightly perturbed: a saddle with rate
:math:`2e^{-\beta}/(e^{\beta} + e^{-\beta}) \approx 0.2384` for :math:`\beta = 1`.

>>> import numpy as np
>>> from verify.model import Model, Instance
>>> from verify.flow.simulate import simulate
>>> m = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere")
>>> inst = Instance(m, [[np.cos(1e-6), np.sin(1e-6)], [-1, 0]])
>>> end = classify_end_state(inst, simulate(inst, 10, checkpoints=11))
>>> end.kind, round(end.unstable_rate, 4), end.dimension
('metastable', 0.2384, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.symmetry_group import SymmetryGroup
from verify.flow.fields import VectorField
from verify.model import Instance
from verify.numerics import EPS, STORED_ULPS, SUM_ULPS, Float64, ulps

__all__ = ["NEAR_FRACTION", "FD_STEP", "JACOBIAN_RELIABLE", "EndState", "autonomous_field",
           "coordinate_basis", "find_equilibrium", "jacobian", "linearisation", "enforced_group",
           "retract", "classify_end_state"]

#: ``x_T`` is near ``x*`` iff ``|x_T − x*|_∞ ≤ NEAR_FRACTION · max(|x_T|_∞, |x(0)|_∞)``.
NEAR_FRACTION = 0.1
#: Central-difference step relative to ``max(1, |x|_∞)`` (about ``ε^{1/3}``); the second is 2×.
FD_STEP = 1e-5
#: Newton has converged when ``|f(x*)|_∞ ≤ NEWTON_TOL · (1 + |x*|_∞ |J|_∞)``.
NEWTON_TOL = 1e-10
NEWTON_MAX_ITER = 60
#: The Jacobian is trusted when its entry error is at most this fraction of
#: ``max(|J|_∞, 1/t)`` (``1/t``: the smallest rate that matters over the run's time ``t``).
JACOBIAN_RELIABLE = 1e-3
REPORTED_EIGENVALUES = 6


@dataclass(frozen=True)
class EndState:
    """The classification of a run's last checkpoint (see the module docstring).

    Attributes
    ----------
    kind : str
        ``"stable"``, ``"metastable"``, ``"moving"``, ``"undecided"`` or ``"not-autonomous"``.
    time, speed, distance : float
        Time of the state, ``|f(x_T)|_∞`` and ``|x_T − x*|_∞`` (nan without equilibrium).
    equilibrium : ndarray or None
        ``x*`` (``n×d``).
    eigenvalues : tuple of complex
        The largest-real-part eigenvalues of ``J_B`` (discrete: of ``I + h J_B``).
    unstable_rate, rate_error : float
        ``ρ`` and its error ``ε_ρ``.
    dimension : int
        Number of allowed coordinates ``r``.
    restricted_to : str
    reason : str
    """

    kind: str
    time: float
    speed: float = math.nan
    distance: float = math.nan
    equilibrium: np.ndarray | None = None
    eigenvalues: tuple = ()
    unstable_rate: float = math.nan
    rate_error: float = math.nan
    dimension: int = 0
    restricted_to: str = ""
    reason: str = ""

    def to_dict(self) -> dict:
        """Plain JSON-able dict (non-finite numbers become ``None``, complex ``[re, im]``)."""
        def num(v: float):
            return float(v) if math.isfinite(v) else None

        return {"kind": self.kind, "time": num(self.time), "speed": num(self.speed),
                "distance": num(self.distance),
                "equilibrium": None if self.equilibrium is None else self.equilibrium.tolist(),
                "eigenvalues": [[num(z.real), num(z.imag)] for z in self.eigenvalues],
                "unstable_rate": num(self.unstable_rate), "rate_error": num(self.rate_error),
                "dimension": self.dimension, "restricted_to": self.restricted_to,
                "reason": self.reason}


def autonomous_field(instance: Instance) -> Callable[[np.ndarray], np.ndarray]:
    """``x ↦ f(x)`` (``n×d`` float64) with ``ẋ = f(x)`` (``form="x"``) or ``Φ(x) = x + h f(x)``
    (``form="discrete"``), from :class:`verify.flow.fields.VectorField`.

    Raises
    ------
    InvalidArgument
        For ``form="z"``, whose field depends on ``t``.

    Examples
    --------
    >>> from verify.model import Model, Instance
    >>> f = autonomous_field(Instance(Model(V=[[2]], form="x"), [[3]]))
    >>> f(np.array([[1.5]]))          # one token: ẋ = V x
    array([[3.]])
    """

    model = instance.model
    if model.rescaled:
        raise InvalidArgument(f"form={model.form!r} (str): the rescaled field depends on t, so "
                              "it has no equilibria; use form='x' or 'discrete', or judge the "
                              "z-run by its trend fits (verify.analysis.observed_limits).")
    field = VectorField(model, instance.n, Float64())

    def f(x: np.ndarray) -> np.ndarray:
        return np.asarray(field(0.0, np.asarray(x, dtype=float)), dtype=float)

    return f


def coordinate_basis(instance: Instance, x: np.ndarray, group=None) -> tuple[np.ndarray, str]:
    """Orthonormal basis ``B`` (``nd×r``, acting on ``x.ravel()``) of the allowed coordinates at
    ``x``, and its description: the tangent space of ``(S^{d-1})^n`` for the sphere, the fixed
    subspace of ``group`` (a :class:`~verify.exact.symmetry_group.SymmetryGroup`), both, or
    ``R^{nd}``.

    >>> from verify.model import Model, Instance
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere"), [[1, 0]])
    >>> B, text = coordinate_basis(inst, np.array([[1.0, 0.0]]))
    >>> np.abs(B).ravel().tolist(), text
    ([0.0, 1.0], 'tangent space of (S^1)^1')
    """
    n, d = instance.n, instance.d
    sphere = instance.model.on_sphere
    x = np.asarray(x, dtype=float).reshape(n, d)
    if group is None:
        if not sphere:
            return np.eye(n * d), f"R^{n * d}"
        B = np.zeros((n * d, n * (d - 1)))
        for i in range(n):
            u = x[i] / np.linalg.norm(x[i])
            # the last d−1 left singular vectors of u: an orthonormal basis of u^⊥
            basis = np.linalg.svd(u.reshape(d, 1), full_matrices=True)[0][:, 1:]
            B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = basis
        return B, f"tangent space of (S^{d - 1})^{n}"
    columns = []
    for members, zero in group.orbits():
        if not zero:
            v = np.zeros(n * d)
            for i, c, s in members:
                v[i * d + c] = s
            columns.append(v / math.sqrt(len(members)))
    G = np.array(columns).T if columns else np.zeros((n * d, 0))
    text = "fixed subspace of the exact symmetries"
    if not sphere:
        return G, text
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    V = G.reshape(n, d, -1)
    P = (V - u[:, :, None] * np.einsum("ic,icr->ir", u, V)[:, None, :]).reshape(n * d, -1)
    # At a point of F the tangent projection maps F into F: its singular values are 0 or 1.
    U, s, _ = np.linalg.svd(P, full_matrices=False)
    return U[:, s > 0.5], f"tangent space of (S^{d - 1})^{n} ∩ {text}"


def retract(instance: Instance, x: np.ndarray, group) -> np.ndarray:
    """``x`` put back on the allowed set: tokens normalised on the sphere (post-LN), then
    projected onto the fixed subspace of ``group`` (if any)."""
    if instance.model.on_sphere:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    if group is not None:
        x = group.project(x, Float64())
    return x


def _differences(f, x: np.ndarray, B: np.ndarray, h: float) -> np.ndarray:
    """``Bᵀ (f(x + h b) − f(x − h b)) / (2h)`` for the columns ``b`` of ``B``."""
    cols = [(f(x + h * b.reshape(x.shape)) - f(x - h * b.reshape(x.shape))).ravel() / (2 * h)
            for b in B.T]
    return B.T @ np.array(cols).T if cols else np.zeros((0, 0))


def _noise(f, x: np.ndarray) -> float:
    """Rounding level of ``f`` near ``x``: changes of ``f`` under a few ``4ε``-jitters of ``x``."""
    rng = np.random.default_rng(0)
    f0, scale = f(x), max(1.0, float(np.max(np.abs(x))))
    jumps = [np.max(np.abs(f(x + ulps(STORED_ULPS, scale) * rng.choice([-1.0, 1.0], x.shape))
                          - f0))
             for _ in range(3)]
    return max(max(jumps), ulps(STORED_ULPS, float(np.max(np.abs(f0)))))


def jacobian(instance: Instance, x_star: np.ndarray, *, basis: np.ndarray | None = None,
             group=None) -> tuple[np.ndarray, float]:
    r"""The restricted Jacobian :math:`J_B = B^\top Df(x^*) B` and an error estimate.

    Central differences at :math:`h` = ``FD_STEP`` · :math:`\max(1, |x^*|_\infty)` and at
    :math:`2h`; :math:`J_h` is returned, with error
    :math:`\max|J_h - J_{2h}| + \eta/h` (:math:`J_h - J_{2h} \approx 3\times` the truncation
    error :math:`h^2 f'''/6` of :math:`J_h`, and :math:`\eta/h` bounds the rounding of the
    differences, :math:`\eta` the field's measured rounding level). At an equilibrium of the
    sphere dynamics :math:`Df(x^*)` maps into the tangent space, so :math:`J_B` is the
    linearisation on :math:`(S^{d-1})^n`.

    Parameters
    ----------
    instance : Instance
    x_star : ndarray, shape (n, d)
    basis : ndarray, shape (nd, r), optional
        Orthonormal columns; default :func:`coordinate_basis` at ``x_star`` (with ``group``).
    group : SymmetryGroup, optional

    Returns
    -------
    J : ndarray, shape (r, r)
    error : float

    Examples
    --------
    One token, ``ẋ = V x``: the Jacobian is ``V``.

    >>> from verify.model import Model, Instance
    >>> inst = Instance(Model(V=[[1, 2], [-3, "1/2"]], form="x"), [[1, 0]])
    >>> J, err = jacobian(inst, np.array([[0.3, -0.7]]))
    >>> J.round(9).tolist(), bool(err < 1e-9)
    ([[1.0, 2.0], [-3.0, 0.5]], True)
    """
    f = autonomous_field(instance)
    x = np.asarray(x_star, dtype=float).reshape(instance.n, instance.d)
    B = coordinate_basis(instance, x, group)[0] if basis is None else np.asarray(basis, float)
    h = FD_STEP * max(1.0, float(np.max(np.abs(x))))
    J1, J2 = _differences(f, x, B, h), _differences(f, x, B, 2 * h)
    if J1.size == 0:
        return J1, 0.0
    return J1, float(np.max(np.abs(J1 - J2))) + _noise(f, x) / h


def find_equilibrium(instance: Instance, x: np.ndarray, *, basis: np.ndarray | None = None,
                     group=None) -> tuple[np.ndarray, float, bool]:
    r"""Newton's method for :math:`f(x^*) = 0` from ``x`` on the allowed coordinates.

    Each step solves :math:`J_B u = -B^\top f(x)` in the least-squares, minimum-norm sense
    (singular :math:`J_B` at non-isolated equilibria), moves to :math:`x + Bu` with
    backtracking on :math:`|f|_\infty`, and retracts (tokens normalised on the sphere,
    projected onto the fixed subspace of ``group``).

    Returns
    -------
    x_star : ndarray, shape (n, d)
    residual : float
        :math:`|f(x^*)|_\infty`.
    converged : bool
        ``residual ≤ NEWTON_TOL · (1 + |x*|_∞ |J_B|_∞)``.

    Examples
    --------
    >>> from verify.model import Model, Instance
    >>> m = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere")
    >>> x, res, ok = find_equilibrium(Instance(m, [[1, 0], [-1, 0]]), np.array(
    ...     [[0.999, 0.04471017], [-1.0, 0.0]]))
    >>> ok, bool(abs(abs(x[0] @ x[1]) - 1) < 1e-12)      # antipodal (or together) again
    (True, True)
    """
    f = autonomous_field(instance)
    x = retract(instance, np.array(x, dtype=float).reshape(instance.n, instance.d), group)
    fixed = None if basis is None else np.asarray(basis, dtype=float)
    res, tol = float(np.max(np.abs(f(x)))), math.inf
    for _ in range(NEWTON_MAX_ITER):
        B = coordinate_basis(instance, x, group)[0] if fixed is None else fixed
        if B.shape[1] == 0:
            break
        h = FD_STEP * max(1.0, float(np.max(np.abs(x))))
        J = _differences(f, x, B, h)
        tol = NEWTON_TOL * (1.0 + float(np.max(np.abs(x))) * float(np.max(np.abs(J))))
        if res <= tol or not np.all(np.isfinite(J)):
            break
        u = np.linalg.lstsq(J, -(B.T @ f(x).ravel()), rcond=1e-12)[0]
        step, lam = (B @ u).reshape(x.shape), 1.0
        while lam > 1e-6:
            trial = retract(instance, x + lam * step, group)
            r_trial = float(np.max(np.abs(f(trial))))
            if r_trial < res:
                break
            lam /= 2
        else:
            break  # no decrease: stagnated
        x, res = trial, r_trial
    if math.isinf(tol):  # no Jacobian was formed (r = 0): the allowed set is a point
        tol = NEWTON_TOL * (1.0 + float(np.max(np.abs(x))))
    return x, res, bool(res <= tol)


def _rate(J: np.ndarray, h_layer) -> tuple[float, np.ndarray]:
    """``ρ`` and the eigenvalues reported (of ``J``, or of ``I + hJ`` for discrete layers)."""
    lam = np.linalg.eigvals(J)
    if h_layer is None:
        return float(np.max(lam.real)), lam
    mu = 1 + h_layer * lam
    with np.errstate(divide="ignore"):
        return float(np.max(np.log(np.abs(mu)))) / h_layer, mu


def linearisation(instance, x_star, group, h_layer):
    """``(J, jac_error, ρ, ε_ρ, eigenvalues, basis text)`` at ``x_star``: the restricted
    Jacobian (:func:`jacobian`), its entry error, the top rate ``ρ`` and its error ``ε_ρ``
    (module docstring), the eigenvalues of ``J`` (discrete: of ``I + hJ``) and the description
    of the allowed coordinates."""
    import scipy.linalg

    f = autonomous_field(instance)
    B, text = coordinate_basis(instance, x_star, group)
    r = B.shape[1]
    J, jac_err = jacobian(instance, x_star, basis=B)
    if r == 0:
        return J, 0.0, math.nan, 0.0, np.zeros(0), text
    h = FD_STEP * max(1.0, float(np.max(np.abs(x_star))))
    rho, eig = _rate(J, h_layer)
    two_step = abs(rho - _rate(_differences(f, x_star, B, 2 * h), h_layer)[0])
    lam, left, right = scipy.linalg.eig(J, left=True, right=True)
    with np.errstate(divide="ignore"):
        cond = np.max(1.0 / np.abs(np.sum(left.conj() * right, axis=0)))
    entry_err = jac_err + ulps(SUM_ULPS * r, float(np.max(np.abs(J))))
    bound = cond * r * entry_err
    if h_layer is not None:  # |d log|1 + hλ| / h / dλ| ≤ 1 / |1 + hλ|
        bound /= max(float(np.min(np.abs(1 + h_layer * lam))), EPS)
    # (c) the Newton residual: ρ one more (minimum-norm) Newton step away
    g = B.T @ f(x_star).ravel()
    residual = 0.0
    if np.any(g != 0):
        u = np.linalg.lstsq(J, -g, rcond=1e-12)[0]
        x_next = retract(instance, x_star + (B @ u).reshape(x_star.shape), group)
        B2 = coordinate_basis(instance, x_next, group)[0]
        if B2.shape[1] == r:
            residual = abs(_rate(_differences(f, x_next, B2, h), h_layer)[0] - rho)
    return J, jac_err, rho, two_step + bound + residual, eig, text


def enforced_group(instance: Instance, trajectory):
    """The symmetry group the run was kept on (``trajectory.symmetry``, rebuilt from its saved
    form), or ``None``."""
    info = getattr(trajectory, "symmetry", None)
    if not info or not info.get("enforced"):
        return None

    group = SymmetryGroup.from_dict(info["group"])
    return group if (group.n, group.d) == (instance.n, instance.d) else None


def classify_end_state(instance: Instance, trajectory) -> EndState:
    """Classify the last checkpoint of ``trajectory`` (a run of ``instance``).

    See the module docstring for the rules. The group kept by the run (``trajectory.symmetry``,
    rebuilt from its saved form: exactly the group that was enforced) restricts the
    coordinates.

    Returns
    -------
    EndState

    Examples
    --------
    >>> from verify.model import Model, Instance
    >>> from verify.flow.simulate import simulate
    >>> inst = Instance(Model(V=[[1]]), [[1], [2]])         # form "z": time-dependent field
    >>> classify_end_state(inst, simulate(inst, 1, checkpoints=2)).kind
    'not-autonomous'
    """
    time = float(trajectory.times[-1])
    model = instance.model
    if model.rescaled:
        return EndState("not-autonomous", time, reason="the rescaled field depends on t, so "
                        "there are no equilibria to classify; the trend fits decide.")
    x_T = np.asarray(trajectory.state[-1], dtype=float)
    if not np.all(np.isfinite(x_T)):
        return EndState("moving", time, reason="the last state is not finite.")
    f = autonomous_field(instance)
    speed = float(np.max(np.abs(f(x_T))))
    group = enforced_group(instance, trajectory)
    x_star, residual, ok = find_equilibrium(instance, x_T, group=group)
    scale = max(float(np.max(np.abs(x_T))), float(np.max(np.abs(instance.x0_float()))))
    distance = float(np.max(np.abs(x_T - x_star)))
    common = {"speed": speed}
    if not ok:
        return EndState("moving", time, **common, reason=f"Newton's method from the last state "
                        f"found no equilibrium (residual {residual:.2g}).")
    if not distance <= NEAR_FRACTION * scale:
        return EndState("moving", time, distance=distance, equilibrium=x_star, **common,
                        reason=f"the nearest equilibrium found is at distance {distance:.3g} > "
                        f"{NEAR_FRACTION} × {scale:.3g}.")
    h_layer = float(model.h) if model.discrete else None
    J, jac_err, rho, err, eig, text = linearisation(instance, x_star, group, h_layer)
    with np.errstate(divide="ignore"):
        key = np.log(np.abs(eig)) / h_layer if h_layer else eig.real
    order = np.argsort(-key, kind="stable")
    top = tuple(complex(z) for z in eig[order][:REPORTED_EIGENVALUES])
    common.update(distance=distance, equilibrium=x_star, eigenvalues=top, unstable_rate=rho,
                  rate_error=err, dimension=J.shape[0], restricted_to=text)
    if J.shape[0] == 0:
        return EndState("stable", time, **common, reason="the allowed coordinates at the "
                        "equilibrium reduce to a point: nothing can move it on the invariant set.")
    size = max(float(np.max(np.abs(J))), 1.0 / time if time > 0 else math.inf)
    if not math.isfinite(err) or jac_err > JACOBIAN_RELIABLE * size:
        return EndState("undecided", time, **common, reason=f"the Jacobian is not reproducible "
                        f"(entry error {jac_err:.2g} vs max(|J|, 1/t) = {size:.2g}) or the rate "
                        "error is not finite.")
    if rho > err:
        return EndState("metastable", time, **common, reason=f"near an equilibrium with an "
                        f"unstable direction: rate {rho:.4g} > its error {err:.2g}.")
    neutral = int(np.sum(np.abs(key) <= err))
    return EndState("stable", time, **common, reason=f"near an equilibrium with no unstable "
                    f"direction: rate {rho:.3g} ≤ its error {err:.2g} ({neutral} neutral).")
