r"""Rigorous enclosures of a trajectory: :class:`Enclosure`.

An :class:`Enclosure` holds balls (python-flint ``arb``) that **contain the exact solution** of
the instance's dynamics at every time of :math:`[0, t]`: chained interval Taylor steps
(:mod:`verify.enclosure._taylor`, whose docstring states the theorem) from the exact initial
tokens — rational, so the first box has radius 0 (on the sphere: :math:`x_i(0)/|x_i(0)|`, in
balls).

**Exact symmetries.** When the weights and the tokens have an exact signed-permutation symmetry
(:func:`verify.exact.symmetry.find_symmetries`; one head, full attention), the exact solution
lies in the fixed subspace :math:`F` forever (uniqueness of solutions; see
:mod:`verify.exact.symmetry`). After every step each orbit of entries is replaced by the
*intersection* of its balls (times the signs), and an orbit forced to 0 by exactly 0: the result
still contains the exact solution, and an unstable direction across :math:`F` (the middle token
of a symmetric configuration) no longer inflates the balls.

The rescaled tokens are :math:`z(t) = e^{-tV} x(t)` (:meth:`Enclosure.z_at`, with a rigorous
matrix exponential).

Examples
--------
One token, :math:`\dot x = V x` (token form): the enclosure contains :math:`e^{tV} x(0)`.

>>> from verify.model import Instance, Model
>>> inst = Instance(Model(V=[[0, -1], [1, 0]], form="x"), [[1, 0]])
>>> enc = Enclosure(inst, bits=128)
>>> enc.advance(1)
True
>>> from flint import arb, ctx
>>> with ctx.workprec(300):
...     bool(enc.x_at(1)[0, 0].contains(arb(1).cos())), enc.radius(1) < 1e-10
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx, fmpq

from verify.enclosure._fields import FieldSpec, exact_matrix, float64_jets, unsupported
from verify.enclosure._taylor import (
    StepFailure,
    _identity,
    ball_of,
    norm_inf_upper,
    taylor_step,
)
from verify.errors import InvalidArgument
from verify.exact.symmetry import find_symmetries

__all__ = ["Enclosure", "DEFAULT_BITS", "DEFAULT_ORDER", "DEFAULT_TOL", "MAX_SIZE"]

DEFAULT_BITS = 128
DEFAULT_ORDER = 12
#: Each step aims at a last Taylor term of about this much of the state.
DEFAULT_TOL = 2.0 ** -40
#: Enclosures are for small systems: ``n · d`` at most this.
MAX_SIZE = 64


def _initial_balls(instance) -> arb_mat:
    rows = [[arb(fmpq(v.numerator, v.denominator)) for v in row] for row in instance.x0]
    if instance.model.on_sphere:
        rows = [[v / sum((u * u for u in row), arb(0)).sqrt() for v in row] for row in rows]
    return arb_mat(rows)


#: Below this bound on :math:`\|A^\top A - I\|_\infty` the pseudo-inverse is enclosed by the
#: Neumann series (:func:`_pseudo_inverse`), above it by Arb's solve.
_NEARLY_ORTHONORMAL = 2.0 ** -20


def _pseudo_inverse(A: arb_mat) -> arb_mat:
    """An enclosure of :math:`(A^\\top A)^{-1} A^\\top` (``A`` with independent columns).

    Lohner's ``A`` is orthonormal in float64, so :math:`A^\\top A = I + \\Delta` with
    :math:`\\varepsilon \\ge \\|\\Delta\\|_\\infty` of the order of the rounding; then
    :math:`(I + \\Delta)^{-1} = I - \\Delta (I + \\Delta)^{-1}`, whose second term has
    :math:`\\infty`-norm — so every entry — at most :math:`\\eta = \\varepsilon / (1 -
    \\varepsilon)` (the Neumann series), and the pseudo-inverse lies in :math:`(I + [\\pm
    \\eta])\\, A^\\top` (entrywise balls): a product instead of a solve (a third of the
    Lohner update's CPU for ``n d = 36``). Otherwise (``ε`` above :data:`_NEARLY_ORTHONORMAL`,
    e.g. the symmetries' basis) Arb's solve of :math:`A^\\top A\\, Y = A^\\top`.

    >>> from flint import arb_mat
    >>> Y = _pseudo_inverse(arb_mat([[0.6, -0.8], [0.8, 0.6]]))
    >>> all(Y[i, j].contains(v) for i, j, v in [(0, 0, 0.6), (0, 1, 0.8), (1, 0, -0.8)])
    True
    """
    At = A.transpose()
    gram = At * A
    k = gram.nrows()
    epsilon = norm_inf_upper(gram - _identity(k))
    if not epsilon <= _NEARLY_ORTHONORMAL:
        return gram.solve(At)
    eta = (epsilon / (1 - epsilon)).upper()
    return arb_mat(k, k, [arb(1 if i == j else 0, eta) for i in range(k)
                          for j in range(k)]) * At


def _symmetry_group(instance):
    model = instance.model
    if not model.single_head or model.mask_for(instance.n) is not None:
        return None

    try:
        group = find_symmetries(model.V, model.B, instance.x0)
    except InvalidArgument:  # d too large for the search: no symmetry used
        return None
    return None if group.is_trivial else group


class Enclosure:
    """Balls containing the exact trajectory of ``instance`` (module docstring).

    Parameters
    ----------
    instance : verify.model.Instance
        ``n · d <= 64``; any continuous variant except hardmax attention and an MLP.
    bits : int
        Working precision of the balls (the Taylor coefficients are computed in float64
        midpoint–radius balls where that loses nothing measurable:
        :func:`~verify.enclosure._fields.float64_jets`).
    order : int
        Order ``N`` of the Taylor steps.
    tol : float
        Each step's last Taylor term aims at about ``tol`` times the size of the state.
    symmetry : bool
        Intersect with the fixed subspace of the exact symmetries (module docstring).

    Attributes
    ----------
    t : Fraction
        How far the enclosure reaches.
    steps : list of Step
        The validated steps (``step.over(lo, hi)`` encloses the state on a sub-interval).
    status, message : str
        ``"ok"``, or ``"failed"`` / ``"budget"`` with the reason, after :meth:`advance`.
    group : SymmetryGroup or None
        The symmetry intersected with.

    Raises
    ------
    InvalidArgument
        Too large, or a variant without an enclosure.
    """

    def __init__(self, instance, *, bits: int = DEFAULT_BITS, order: int = DEFAULT_ORDER,
                 tol: float = DEFAULT_TOL, symmetry: bool = True) -> None:
        model = instance.model
        why = unsupported(model)
        if why is not None:
            raise InvalidArgument(f"no enclosure for this model: {why}")
        if instance.n * instance.d > MAX_SIZE:
            raise InvalidArgument(f"enclosures are for small systems: n·d = "
                                  f"{instance.n * instance.d} > {MAX_SIZE}.")
        if bits < 53 or order < 2:
            raise InvalidArgument(f"bits={bits} must be >= 53 and order={order} >= 2.")
        self.instance, self.model, self.n, self.d = instance, model, instance.n, instance.d
        self.bits, self.order, self.tol = int(bits), int(order), float(tol)
        self.group = _symmetry_group(instance) if symmetry else None
        with ctx.workprec(self.bits):
            self.field = FieldSpec(model, instance.n, midrad=float64_jets(self.bits, self.tol))
            X0 = self._project(_initial_balls(instance))
            self.centre = X0.mid()
            self.A = self._basis()
            offset = arb_mat(self.n * self.d, 1, [v - c for v, c in zip(
                X0.entries(), self.centre.entries(), strict=True)])
            self.r = _pseudo_inverse(self.A) * offset
            self.x = self._hull()
        self.t = Fraction(0)
        self.steps: list = []
        self.marks: dict[Fraction, arb_mat] = {Fraction(0): self.x}
        self.status, self.message = "ok", ""
        self.seconds = 0.0

    # ---------------------------------------------------------------------------------- stepping
    def advance(self, t_end, *, expired: Callable[[], bool] | None = None,
                max_steps: int = 100_000) -> bool:
        """Extend the enclosure to ``t_end`` (a mark: :meth:`x_at` gives the state there).
        Returns False (``status``/``message`` say why) when a step fails or ``expired()``
        (asked before every step: the caller's time budget) is true."""
        t_end = Fraction(t_end)
        if t_end < self.t:
            raise InvalidArgument(f"t_end={t_end} is before the enclosure's end {self.t}.")
        if self.status != "ok":
            return False
        start = time.perf_counter()
        try:
            with ctx.workprec(self.bits):
                while self.t < t_end:
                    if expired is not None and expired():
                        self.status = "budget"
                        self.message = f"the time budget ran out at t = {float(self.t):.4g}."
                        return False
                    if len(self.steps) >= max_steps:
                        self.status, self.message = "failed", f"max_steps={max_steps} reached."
                        return False
                    try:
                        step = taylor_step(self.field, self.t, self.centre, self.A, self.r,
                                           t_end - self.t, order=self.order, tol=self.tol,
                                           h_hint=self.steps[-1].h_next if self.steps else None,
                                           exponent=self.steps[-1].exponent if self.steps else 0)
                    except StepFailure as exc:
                        self.status = "failed"
                        self.message = f"at t = {float(self.t):.4g}: {exc}"
                        return False
                    self._lohner(step)
                    if not all(v.is_finite() for v in self.x.entries()):
                        self.status = "failed"
                        self.message = f"the balls lost all accuracy at t = {float(self.t):.4g}."
                        return False
                    self.steps.append(step)
                    self.t = step.t1
        finally:
            self.seconds += time.perf_counter() - start
        self.marks[t_end] = self.x
        return True

    def _lohner(self, step) -> None:
        """Lohner's QR update of the set ``centre + A r`` (module docstring)."""
        P = self._project(step.centre_end())
        centre = P.mid()
        delta = arb_mat(self.n * self.d, 1, [v - c for v, c in zip(
            P.entries(), centre.entries(), strict=True)])
        M = step.WA_end
        mids = np.array([float(v) for v in M.mid().entries()]).reshape(M.nrows(), M.ncols())
        radii = np.array([float(v.rad()) for v in self.r.entries()])
        order = np.argsort(-np.linalg.norm(mids * radii, axis=0), kind="stable")
        Q = np.linalg.qr(mids[:, order])[0]
        if self.group is not None:
            Q = np.column_stack([self.group.project(q.reshape(self.n, self.d)).reshape(-1)
                                 for q in Q.T])
        A = arb_mat(Q.tolist())
        inverse = _pseudo_inverse(A)
        # the columns are ordered for the QR only: (inverse M) r sums the same terms
        self.r = (inverse * M) * self.r + inverse * delta
        self.A, self.centre = A, centre
        self.x = self._hull()

    def _hull(self) -> arb_mat:
        return self.centre + arb_mat(self.n, self.d, (self.A * self.r).entries())

    def _basis(self) -> arb_mat:
        """A basis (columns) of the subspace the exact solution lives in: everything, or the
        fixed subspace of the symmetries (one column per orbit not forced to 0)."""
        m = self.n * self.d
        if self.group is None:
            return arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
        columns = []
        for members, zero in self.group.orbits():
            if not zero:
                column = [0] * m
                for i, c, sign in members:
                    column[i * self.d + c] = sign
                columns.append(column)
        return arb_mat([[col[k] for col in columns] for k in range(m)])

    def _project(self, X: arb_mat) -> arb_mat:
        if self.group is None:
            return X
        values = X.entries()
        d = self.d
        for members, zero in self.group.orbits():
            if zero:
                v = arb(0)
            else:
                v = None
                for i, c, s in members:
                    w = values[i * d + c] if s > 0 else -values[i * d + c]
                    v = w if v is None else v.intersection(w)
            for i, c, s in members:
                values[i * d + c] = v if s > 0 else -v
        return arb_mat(self.n, d, values)

    # ---------------------------------------------------------------------------------- reading
    def state_at(self, t) -> arb_mat:
        """The balls of the integrated variable (``z`` for the rescaled form, ``x`` otherwise)
        at a mark ``t`` (0 or a ``t_end`` of :meth:`advance`)."""
        t = Fraction(t)
        if t not in self.marks:
            raise InvalidArgument(f"t={t} is not a mark of this enclosure (marks: "
                                  f"{sorted(float(m) for m in self.marks)}); advance to it.")
        return self.marks[t]

    def _exp(self, t: Fraction, sign: int) -> arb_mat:
        return (exact_matrix(self.model.V) * (sign * ball_of(t))).exp().transpose()

    def z_at(self, t) -> arb_mat:
        """The rescaled tokens :math:`z = e^{-tV} x` at a mark (one head)."""
        X = self.state_at(t)
        if self.field.rescaled:
            return X
        with ctx.workprec(self.bits):
            return X * self._exp(Fraction(t), -1)

    def x_at(self, t) -> arb_mat:
        """The tokens :math:`x` at a mark."""
        X = self.state_at(t)
        if not self.field.rescaled:
            return X
        with ctx.workprec(self.bits):
            return X * self._exp(Fraction(t), 1)

    def radius(self, t=None) -> float:
        """The largest ball radius at the mark ``t`` (default: the end)."""
        X = self.x if t is None else self.state_at(t)
        return max((float(v.rad()) for v in X.entries()), default=0.0)

    def digits(self, t=None) -> float:
        """Correct decimal digits of the largest token coordinate at ``t`` (default: the end)."""
        X = self.x if t is None else self.state_at(t)
        size = max((float(abs(v.mid())) for v in X.entries()), default=0.0)
        r = self.radius(t)
        if r == 0:
            return math.inf
        return -math.log10(r / max(size, 1e-300))

    def describe(self) -> dict:
        """Plain data: method, precision, step tolerance, steps, reach, radius."""
        return {"method": f"interval Taylor, mean-value form, Lohner QR (order {self.order})",
                "bits": self.bits, "tol": self.tol, "steps": len(self.steps), "t": str(self.t),
                "radius": self.radius(), "status": self.status, "message": self.message,
                "symmetry": None if self.group is None else self.group.describe(),
                "seconds": round(self.seconds, 3)}
