r"""The splitting :math:`F \oplus G` of Theorem 5.2, shared by the checks of §5 and §12.

For a paranormal ``V`` (:func:`verify.exact.paranormal`) with rational :math:`\lambda`, ``F`` and
``G``: the exact coordinates of :math:`\pi_F` (:func:`f_coordinates`), the depth of points in
the polytope of the projected limits (:func:`boundary_depths`) and the safe-case data of an
instance (:func:`splitting`). The checks using them:

* :mod:`verify.checks.boundrj` — ``boundrj_inequality`` (the bound on :math:`r_j(t)` in the
  proof of Theorem 5.2, ``boundrj-step``);
* :mod:`verify.checks.subspace` — ``polytope_subspace_limit`` (Theorem 5.2);
* :mod:`verify.checks.open_problems` — ``leader_clustering`` (``generic-qk``) and
  ``no_clustering`` (``complex-leading``).

Every verdict compares a margin with an error derived from the trajectory's error estimate and
the fits' error bars (:mod:`verify.limits`); nothing here is tuned to pass.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.checks._parts import inconclusive
from verify.checks._runs import fits_summary, simulate_with_run, unstable_result
from verify.claim import CheckRequest
from verify.errors import InvalidArgument

__all__ = ["f_coordinates", "boundary_depths", "splitting", "projected_run"]


def f_coordinates(F_basis, G_basis) -> np.ndarray:
    r"""The exact linear map :math:`z \mapsto c` with :math:`\pi_F z = \sum_s c_s f_s`.

    Parameters
    ----------
    F_basis, G_basis : sequences of rational vectors (rows) spanning ``F`` and ``G``,
        with :math:`F \oplus G = \mathbb R^d`.

    Returns
    -------
    ndarray of Fraction, shape (dim F, d)

    Examples
    --------
    >>> f_coordinates([[1, 0]], [[1, 1]]).tolist()      # z = (3, 5) = -2·(1, 0) + 5·(1, 1)
    [[Fraction(1, 1), Fraction(-1, 1)]]
    """
    from verify.exact.linalg import from_fmpq_mat, to_fmpq_mat

    rows = [list(v) for v in F_basis] + [list(v) for v in G_basis]
    M = np.array([[Fraction(x) for x in row] for row in rows], dtype=object)
    if M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise InvalidArgument(f"F_basis and G_basis give {M.shape[0]} vectors of length "
                              f"{M.shape[1] if M.ndim == 2 else '?'}; they must form a basis.")
    inverse = from_fmpq_mat(to_fmpq_mat(M.T).inv())  # c = (Mᵀ)⁻¹ z
    return inverse[:len(F_basis)]


def boundary_depths(points: np.ndarray) -> tuple[np.ndarray, int]:
    r"""Depth of each point inside :math:`\mathcal K = \mathrm{conv}(\text{points})`: the
    Euclidean distance to :math:`\partial\mathcal K` (0 on the boundary; 0 for every point when
    :math:`\mathcal K` is lower-dimensional, whose boundary in the ambient space is itself).

    Returns the depths and the affine dimension found (Qhull fails on a flat set).

    Examples
    --------
    >>> depth, dim = boundary_depths(np.array([[0., 0], [2, 0], [0, 2], [2, 2], [1, 1]]))
    >>> depth.tolist(), dim
    ([0.0, 0.0, 0.0, 0.0, 1.0], 2)
    """
    pts = np.asarray(points, dtype=float)
    p = pts.shape[1]
    if p == 1:
        lo, hi = pts[:, 0].min(), pts[:, 0].max()
        return np.minimum(pts[:, 0] - lo, hi - pts[:, 0]), int(hi > lo)
    from scipy.spatial import ConvexHull, QhullError

    unique = np.unique(pts, axis=0)
    try:
        hull = ConvexHull(unique)
    except (QhullError, ValueError):
        return np.zeros(len(pts)), int(np.linalg.matrix_rank(unique - unique[0]))
    signed = pts @ hull.equations[:, :-1].T + hull.equations[:, -1]  # ≤ 0 inside
    return np.maximum(0.0, -np.max(signed, axis=1)), p


def splitting(request: CheckRequest):
    """``((F-coordinates C (float), exact data of the splitting and the safe case), None)``, or
    ``(None, inconclusive result)`` when ``F ⊕ G`` is not available in rational form."""
    from verify.exact import good_triple_with_multiplicity, paranormal

    model = request.instance.model
    para = paranormal(model.V)
    if para.holds is not True or para.data.get("F_basis") is None \
            or para.data.get("field") is not None:
        return None, inconclusive(request, "the splitting F ⊕ G is needed in rational form: "
                                  f"{para.explanation}")
    gtm = good_triple_with_multiplicity(model.beta * model.Q, model.K, model.V)
    C = f_coordinates(para.data["F_basis"], para.data["G_basis"])
    safe = gtm.data.get("orthogonal") is True and gtm.data.get("block_diagonal") is True
    info = {"lambda": str(para.value), "dim_F": para.data["dim_F"],
            "F_basis": para.data["F_basis"], "G_basis": para.data["G_basis"],
            "F_orthogonal_to_G": gtm.data.get("orthogonal"),
            "QK_block_diagonal": gtm.data.get("block_diagonal"), "safe_case": safe,
            "good_triple_with_multiplicity": gtm.explanation}
    return (C.astype(float), info), None



def projected_run(request: CheckRequest, tail: float, info_on_failure: bool = False):
    r"""The splitting, the run and the fitted limits of :math:`\pi_F z_i` (over the last ``tail``
    fraction of the checkpoints, :func:`verify.limits.projected_limits`).

    Returns ``((C, info, trajectory, fits, evidence), None)``, ``evidence`` holding ``info``, the
    run summary and a summary of the fits; or ``(None, inconclusive result)`` when there is no
    rational splitting, no error-estimated run (with ``info_on_failure`` the splitting data are
    added to that result's evidence) or a limit has not stabilised.
    """
    from verify.limits import projected_limits

    split, failure = splitting(request)
    if failure:
        return None, failure
    C, info = split
    ran, failure = simulate_with_run(request)
    if failure:
        if info_on_failure:
            failure.evidence.update(info)
        return None, failure
    traj, run = ran
    fits = projected_limits(traj, C, tail_fraction=tail)
    evidence = dict(info, run=run, fits=fits_summary(fits))
    bad = unstable_result(request, fits, "π_F z", evidence)
    if bad:
        return None, bad
    return (C, info, traj, fits, evidence), None
