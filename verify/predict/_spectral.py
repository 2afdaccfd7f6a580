r"""Predictions from the spectrum of ``V``: ``phi1``, ``hyperplanes-a0b`` (Theorem 4.2),
``positive-left-rows`` (Conjecture 4.3) and ``F-coordinates`` (Theorem 5.2).

:math:`\varphi_1^*` is the dual vector of the leading eigenvalue (:func:`verify.exact.
eigenpair`: exact over :math:`\mathbb Q` or :math:`\mathbb Q(\lambda_1)`, or a certified
enclosure), used through its float value with the enclosure radius as its error (basis
*exact* or *enclosure*). The offsets :math:`a, b` of Theorem 4.2 are the extreme values of
:math:`\varphi_1^*` over the certified leaders at the first certified time :math:`t_1` of the run
(basis *estimate*); the middle offset is exactly 0.
"""

from __future__ import annotations

import numpy as np

from verify.analysis.evidence import Basis, sig6
from verify.exact import (
    eigenpair,
    good_triple_with_multiplicity,
    paranormal,
    positive_real_part_count,
)
from verify.exact.splitting import f_coordinates
from verify.numerics import NORMALISED_ULPS, ulps
from verify.predict._evaluation import Value
from verify.predict._leaders import Unavailable, certified_leaders
from verify.vocabulary.conclusions import register_prediction

__all__ = ["phi1", "hyperplanes_a0b", "positive_left_rows", "f_coordinates_rows"]



def _pair(ev):
    if "eigenpair" not in ev.cache:
        try:
            ev.cache["eigenpair"] = eigenpair(ev.instance.model.V)
        except Exception as exc:  # noqa: BLE001 - no real simple leading eigenvalue
            raise Unavailable(f"φ₁* is not defined: {exc}") from None
    return ev.cache["eigenpair"]


@register_prediction("phi1", gives="rows",
                     summary="the dual vector φ₁* of the leading eigenvalue of V (1 × d)")
def phi1(ev) -> Value:
    """φ₁* as a ``1 × d`` row (exact or certified; error: the enclosure radius)."""
    pair = _pair(ev)
    return Value(pair.left_float[None, :], float(pair.radius),
                 {"lambda_1": str(pair.eigenvalue), "phi_star": pair.left_float.tolist(),
                  "phi_star_exact": pair.exact}, source="prediction",
                 basis=Basis.EXACT if pair.exact else Basis.ENCLOSURE)


@register_prediction("hyperplanes-a0b", gives="hyperplanes",
                     summary="Theorem 4.2: {φ₁* = a}, {φ₁* = 0}, {φ₁* = b}, a and b from the "
                             "certified leaders")
def hyperplanes_a0b(ev) -> Value:
    """Rows ``[φ₁*, c]`` for ``c`` in ``a, 0, b`` (duplicates dropped)."""
    phi = phi1(ev)
    row = phi.array[0]
    found = certified_leaders(ev)
    values = found.positions[found.leaders] @ row
    errors = found.errors[found.leaders] * float(np.sum(np.abs(row))) + phi.error * float(
        np.max(np.sum(np.abs(found.positions), axis=1)))
    a, b = int(np.argmin(values)), int(np.argmax(values))
    offsets = sorted({float(values[a]), 0.0, float(values[b])})
    table = np.array([[*row, c] for c in offsets])
    # the distance to {φ = c} moves by |Δc| / |φ|; the prediction's error is in those units
    error = float(max(errors[a], errors[b]) / np.linalg.norm(row)) + phi.error
    evidence = {**phi.evidence, **found.evidence(), "a": sig6(values[a]),
                "b": sig6(values[b]),
                "figure": {"predicted": {"hyperplanes": [[sig6(v) for v in row],
                                                         [sig6(c) for c in offsets]],
                                         "label": r"$\{\varphi_1^* = a\}, \{\varphi_1^* = 0\}, "
                                                  r"\{\varphi_1^* = b\}$"}}}
    return Value(table, error, evidence, source="prediction", basis=Basis.ESTIMATE)


@register_prediction("positive-left-rows", gives="rows",
                     summary="orthonormal rows spanning the left invariant subspace of the "
                             "eigenvalues of V with positive real part (k × d)")
def positive_left_rows(ev) -> Value:
    """Rows ``W`` with ``W V = M W`` for the eigenvalues of positive real part; error: the
    residual over the spectral gap (the count ``k`` is checked against the exact one)."""

    V = ev.instance.model.V
    Vf = np.array(V, dtype=float)
    exact = positive_real_part_count(V)
    lam, W = np.linalg.eig(Vf.T)
    keep = lam.real > 0
    k = int(np.sum(keep))
    if exact.value is None or k != int(exact.value):
        raise Unavailable(f"the float eigen-decomposition finds {k} eigenvalues with Re > 0, "
                          f"the exact count is {exact.value}.")
    if k == 0:
        raise Unavailable("V has no eigenvalue with positive real part.")
    rows = []
    for j in np.flatnonzero(keep):
        if lam[j].imag == 0:
            rows.append(W[:, j].real)
        elif lam[j].imag > 0:
            rows += [W[:, j].real, W[:, j].imag]
    Q, _ = np.linalg.qr(np.array(rows).T)
    resid = float(np.max(np.abs(Vf.T @ W[:, keep] - W[:, keep] * lam[keep])))
    gap = float(np.min(np.abs(lam[keep][:, None] - lam[~keep][None, :]))) if k < len(lam) \
        else 1.0
    return Value(Q.T, resid / gap + ulps(NORMALISED_ULPS), {"k": k, "W": Q.T.tolist()},
                 source="prediction",
                 basis=Basis.ESTIMATE)  # a float eigen-decomposition with its residual


@register_prediction("F-coordinates", gives="rows",
                     summary="the exact map z ↦ π_F z (projection onto F along G) in "
                             "coordinates of a rational basis of F")
def f_coordinates_rows(ev) -> Value:
    """``C`` (``dim F × d``) of Theorem 5.2's splitting; exact (error 0 beyond rounding)."""

    model = ev.instance.model
    para = paranormal(model.V)
    if para.holds is not True or para.data.get("F_basis") is None \
            or para.data.get("field") is not None:
        raise Unavailable(f"the splitting F ⊕ G is needed in rational form: "
                          f"{para.explanation}")
    gtm = good_triple_with_multiplicity(model.beta * model.Q, model.K, model.V)
    C = f_coordinates(para.data["F_basis"], para.data["G_basis"]).astype(float)
    safe = gtm.data.get("orthogonal") is True and gtm.data.get("block_diagonal") is True
    return Value(C, ulps(4, float(np.max(np.abs(C)))),  # a conversion, CONVERSION_ULPS = 2
                 {"lambda": str(para.value), "F_basis": para.data["F_basis"],
                  "G_basis": para.data["G_basis"],
                  "F_orthogonal_to_G": gtm.data.get("orthogonal"),
                  "QK_block_diagonal": gtm.data.get("block_diagonal"), "safe_case": safe},
                 source="prediction")
