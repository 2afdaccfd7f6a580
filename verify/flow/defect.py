r"""The local error of an accepted step from the defect of its interpolant (a prototype).

A step from ``(t_k, y_k)`` to ``(t_{k+1}, y_{k+1})``, ``h = t_{k+1} − t_k``, with a continuous
interpolant ``p`` (``p(t_k) = y_k``, ``p(t_{k+1}) = y_{k+1}``) has the defect
``r(s) = p'(s) − f(s, p(s))``, and by the Alekseev–Gröbner formula its local error is exactly

.. math:: δ_k = y_{k+1} − φ(t_{k+1}; t_k, y_k)
          = \int_{t_k}^{t_{k+1}} \frac{∂φ}{∂y}(t_{k+1}; s, p(s))\, r(s)\, ds

(``φ(t; s, y)`` the flow of ``ẏ = f``; differentiate ``s ↦ φ(t_{k+1}; s, p(s))``). ``p`` is
DOP853's dense output of order 7 (three more evaluations,
:meth:`~verify.flow.dop853.DOP853Stepper.dense_at`), so ``r = O(h^7)`` while
``δ_k = O(h^9)``: ``∂φ/∂y`` is needed beyond ``I`` (its ``J`` term is of the same order ``h^9``:
measured, ``R_0`` alone is wrong by ×10⁴ on some steps), and the rule must integrate ``r`` to
``O(h^{10})``. With ``J = ∂f/∂y`` linear in ``t`` between its values ``J_k``, ``J_{k+1}`` at the
step's ends (the points the propagation of :mod:`~verify.flow.global_error` reads anyway),
``x = (s − t_k)/h`` and an ``m``-point rule ``(x_i, w_i)`` on ``[0, 1]``,

.. math:: δ_k ≈ R_0 + J_k M_0 + J_{k+1} M_1 + J_{k+1}^2 R_2,\qquad
          R_0 = h \textstyle\sum_i w_i r_i,\quad
          M_0 = h^2 \textstyle\sum_i w_i \tfrac{(1 − x_i)^2}{2} r_i,\quad
          M_1 = h^2 \textstyle\sum_i w_i \tfrac{1 − x_i^2}{2} r_i,\quad
          R_2 = h^3 \textstyle\sum_i w_i \tfrac{(1 − x_i)^2}{2} r_i

(``r_i = r(t_k + x_i h)``; ``∫_s^{t_{k+1}} J = h (J_k (1 − x)²/2 + J_{k+1} (1 − x²)/2)``, and
``(t_{k+1} − s)² J²/2`` the second-order term): ``m`` field evaluations and three products
``J v`` (:class:`~verify.flow.global_error.EigenLinearisation`). The dropped terms are
``O((h|J|)³)`` and ``O(h²|J''|)`` relative. ``p'`` is a polynomial of degree 6 and ``f(s, p(s))``
is smooth, so the quadrature error is ``O(h^{2m+1})`` (Gauss) or ``O(h^{2m−1})``
(Gauss–Lobatto, whose end points cost nothing: ``p'`` equals ``f`` there, ``r = 0``). So with
Gauss ``m ≥ 5`` (Lobatto ``m ≥ 6``) ``δ_k`` is the local error to leading order, with its sign
and direction, as step doubling gives it (:class:`~verify.flow.global_error.StepDoubling`, 23
evaluations), at ``3 + m`` evaluations. Unlike DOP853's embedded estimate it reads the field
along the step at points the stages did not: an attention turning inside the step shows in
``r``.

It is an **estimate** resting on the step's asymptotic regime (as step doubling does): where the
step is not in it (``h|J|`` not small) the dropped terms are not small either. The expansion
says so itself: its last term ``J_{k+1}² R_2`` is then not small against the sum, and
``converged`` hands such steps to step doubling. Measured (session 12,
``benchmarks/global_error.py --defect``; nothing in the library uses it):

* per step against step doubling and rtol-3e-14 re-integrations: the 128×128 run's crossing
  steps at ``t ≈ 0.819–0.824`` (DOP853's estimate ×19–×820 low) read ×0.92–×1.02, small draw
  #508's step at ``t = 3.67`` (DOP853 ×53 low) ×1.02; but where ``h|J| ≳ 1`` one step reads
  ×13 low (128×128, ``t = 0.6306``, last term 31× the sum) — every step reading ×1.24 or more
  low had a last term above 0.59 of the sum (74 of 422 steps exceed 1/4);
* the linearised global estimate fed with it, true/estimate: 131 small systems (750
  checkpoints, truth at 32 digits) median 1.00, max 1.08 (with ``converged = 1/4`` the same),
  128×128 run ``t > 0.1`` max 1.19 (RK4 propagation) — as tight as step doubling;
  without the ``J²`` term max 4.37, ``R_0`` alone 12.2; Gauss 4 (its quadrature error of the
  local error's own order) 2.27;
* cost on the 128×128 run: 3376 evaluations (8 a step) and 3 products a step (5 with a Heun
  propagation), ×0.8–0.9 the run's CPU (doubling ×2): run + estimate + spot check ×2.5–2.6
  diffrax Tsit5 at equal achieved error — not the ≤ ×2 of issue 26, which leaves an estimate
  ×0.43 the run (``benchmarks/anchors.py hd-defect``, NumPy field).

Examples
--------
>>> import numpy as np
>>> from verify.flow.dop853 import DOP853Stepper
>>> M = np.array([[-1.0, 2.0], [-2.0, -1.0]])
>>> stepper = DOP853Stepper(lambda t, y: y @ M, 0.0, np.array([[1.0, 0.5]]), 1.0, 1e-9, 1e-12)
>>> stepper.h_abs = 0.1                  # the first step's size (the initial rule's is tiny)
>>> _ = stepper.step()
>>> defect = DefectLocalError(lambda t, y: y @ M, type("J", (), {"apply":
...     lambda self, t, y, v: v @ M})(), terms=2)
>>> delta = defect.local_error(stepper)
>>> from scipy.linalg import expm
>>> true = stepper.y - stepper.y_old @ expm((stepper.t - stepper.t_old) * M)
>>> bool(np.abs(delta - true).max() < 0.05 * np.abs(true).max())
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from verify.errors import InvalidArgument
from verify.flow.global_error import StepDoubling

__all__ = ["DefectLocalError", "quadrature"]


def quadrature(rule: str, points: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Nodes ``x_i`` in ``(0, 1)`` and weights ``w_i`` of a rule on ``[0, 1]`` at which the
    defect is *evaluated*: ``"gauss"`` (Gauss–Legendre, ``points`` nodes, exact to degree
    ``2·points − 1``) or ``"lobatto"`` (Gauss–Lobatto with ``points`` nodes, exact to degree
    ``2·points − 3``; its two end nodes are left out, where the defect of an interpolant that
    matches ``f`` at the ends is 0).

    >>> x, w = quadrature("lobatto", 5)
    >>> [round(float(v), 6) for v in x], round(float(w.sum()), 6)   # sum: all but 2·(1/20)
    ([0.172673, 0.5, 0.827327], 0.9)
    """
    if rule == "gauss":
        if points < 1:
            raise InvalidArgument(f"a Gauss rule needs at least 1 point, not {points}")
        x, w = np.polynomial.legendre.leggauss(points)
    elif rule == "lobatto":
        if points < 3:
            raise InvalidArgument(f"a Gauss–Lobatto rule needs at least 3 points, not {points}")
        P = np.polynomial.legendre.Legendre.basis(points - 1)
        x = np.sort(P.deriv().roots().real)  # the interior nodes
        w = 2.0 / (points * (points - 1) * P(x) ** 2)
    else:
        raise InvalidArgument(f"rule must be 'gauss' or 'lobatto', not {rule!r}")
    return 0.5 * (x + 1.0), 0.5 * w


class DefectLocalError:
    r"""``δ_k`` (module docstring) of the last accepted step of a
    :class:`~verify.flow.dop853.DOP853Stepper`, and optionally handed on to ``inner``.

    Parameters
    ----------
    fun : callable ``(t, y) -> ẏ``
        The field of the run (in its coordinates).
    linearisation : object with ``apply(t, y, v) -> J(t, y) v``, optional
        Needed with ``terms ≥ 1``.
    rule, points : str, int
        The quadrature (:func:`quadrature`); Gauss with 5 points by default (3 + 5 evaluations).
    terms : {0, 1, 2}
        Of ``∂φ/∂y(t_{k+1}; s, ·)`` in powers of ``J``: ``0`` gives ``R_0`` alone (which misses
        a term of the same order ``h^9``), ``1`` adds ``J_k M_0 + J_{k+1} M_1`` (``J`` linear in
        ``t`` over the step between its values at the two ends, two products at the points the
        propagation reads anyway), ``2`` also ``J_{k+1}² R_2`` (one more product in
        :meth:`local_error`, which applies ``J_{k+1}`` once to ``M_1 + J_{k+1} R_2``).
    inner : callable, optional
        Gets ``(t_k, y_k, t_{k+1}, y_{k+1}, f_k, f_{k+1}, δ_k)`` (e.g. a
        :class:`~verify.flow.global_error.LinearisedGlobalError`) when the object is called.
    converged : float, optional
        With ``terms = 2``: a step whose last term ``J_{k+1}² R_2`` exceeds ``converged``
        times the sum (max-norms) is out of the expansion's reach (``h|J|`` not small: the
        dropped terms are not small either), and gets step doubling's ``δ_k`` instead
        (:class:`~verify.flow.global_error.StepDoubling`, 23 more evaluations); ``None``: no
        check. ``fell_back[k]`` records each step.

    ``evaluations`` counts the field evaluations it added (the dense output's three and the
    fallbacks' included).
    """

    def __init__(self, fun: Callable, linearisation=None, rule: str = "gauss", points: int = 5,
                 terms: int = 2, inner: Callable | None = None,
                 converged: float | None = None) -> None:
        if terms not in (0, 1, 2):
            raise InvalidArgument(f"terms must be 0, 1 or 2, not {terms!r}")
        if converged is not None and (terms != 2 or not converged > 0):
            raise InvalidArgument(f"converged={converged!r} needs terms=2 and a positive "
                                  "fraction")
        self.converged = converged
        self.fell_back: list[bool] = []
        if terms and linearisation is None:
            raise InvalidArgument("terms ≥ 1 needs a linearisation (J v products).")
        self.fun, self.linearisation, self.terms, self.inner = fun, linearisation, terms, inner
        self.nodes, self.weights = quadrature(rule, points)
        x = self.nodes  # the moments' weights (1, (1 − x)²/2, (1 − x²)/2, (1 − x)²/2 ⋅ h) ⋅ w
        self._moments = self.weights * np.array([np.ones_like(x), 0.5 * (1 - x) ** 2,
                                                 0.5 * (1 - x * x), 0.5 * (1 - x) ** 2])
        self.evaluations = 0

    def _moments_of(self, stepper) -> np.ndarray:
        """``R_0, M_0, M_1, R_2`` (rows; module docstring) of the stepper's last step from the
        defect at the nodes (its dense output: three evaluations, and one per node)."""
        t0, h = stepper.t_old, stepper.t - stepper.t_old
        p, dp = stepper.dense_at(self.nodes)
        for i, x in enumerate(self.nodes):
            dp[i] -= self.fun(t0 + x * h, p[i])  # the defect r_i, in place
        scales = np.array([h, h * h, h * h, h ** 3])[:, None] * self._moments
        R = (scales @ dp.reshape(len(self.nodes), -1)).reshape(4, *stepper.shape)
        self.evaluations += 3 + len(self.nodes)
        return R

    def parts(self, stepper) -> list[np.ndarray]:
        r"""The terms of ``δ_k`` of the stepper's last accepted step, apart: ``[R_0]``, then
        ``J_k M_0``, ``J_{k+1} M_1`` (``terms ≥ 1``), then ``J_{k+1}² R_2`` (``terms = 2``)."""
        R = self._moments_of(stepper)
        parts = [R[0]]
        if self.terms >= 1:
            jvp = self.linearisation.apply
            parts += [jvp(stepper.t_old, stepper.y_old, R[1]), jvp(stepper.t, stepper.y, R[2])]
            if self.terms == 2:
                parts.append(jvp(stepper.t, stepper.y, jvp(stepper.t, stepper.y, R[3])))
        return parts

    def local_error(self, stepper) -> np.ndarray:
        """``δ_k``: the sum of :meth:`parts` (``J_{k+1}`` applied once to ``M_1 + J_{k+1} R_2``:
        one product fewer), or step doubling's where the check of ``converged`` fails."""
        if self.converged is not None:
            parts = self.parts(stepper)
            delta = sum(parts)
            fall_back = np.abs(parts[-1]).max() > self.converged * np.abs(delta).max()
            self.fell_back.append(bool(fall_back))
            if not fall_back:
                return delta
            self.evaluations += 23
            shape = stepper.shape
            return StepDoubling(self.fun).local_error(stepper.t_old, stepper.y_old, stepper.t,
                                                      stepper.y, stepper.K[0].reshape(shape))
        if self.terms == 0:
            return self._moments_of(stepper)[0]
        R = self._moments_of(stepper)
        jvp, t1, y1 = self.linearisation.apply, stepper.t, stepper.y
        last = R[2] if self.terms == 1 else R[2] + jvp(t1, y1, R[3])
        return R[0] + jvp(stepper.t_old, stepper.y_old, R[1]) + jvp(t1, y1, last)

    def __call__(self, stepper) -> None:
        """Hand the stepper's last step with its ``δ_k`` to ``inner``."""
        K = stepper.K
        self.inner(stepper.t_old, stepper.y_old, stepper.t, stepper.y,
                   K[0].reshape(stepper.shape), K[-1].reshape(stepper.shape),
                   self.local_error(stepper))
