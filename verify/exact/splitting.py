r"""The splitting :math:`\mathbb R^d = F \oplus G` of Theorem 5.2 in exact coordinates.

For a paranormal ``V`` (:func:`verify.exact.paranormal`: ``V|_F = λ I``, the spectral radius
of ``V|_G`` below ``λ``) with rational bases of ``F`` and ``G``, :func:`f_coordinates` is the
exact linear map :math:`z \mapsto c` with :math:`\pi_F z = \sum_s c_s f_s` (the projection onto
``F`` along ``G``).

Examples
--------
>>> f_coordinates([[1, 0]], [[1, 1]]).tolist()      # z = (3, 5) = -2·(1, 0) + 5·(1, 1)
[[Fraction(1, 1), Fraction(-1, 1)]]
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.linalg import from_fmpq_mat, to_fmpq_mat

__all__ = ["f_coordinates"]


def f_coordinates(F_basis, G_basis) -> np.ndarray:
    r"""The exact matrix ``C`` (``dim F × d``, Fractions) of :math:`z \mapsto c`,
    :math:`\pi_F z = \sum_s c_s f_s`, from rational bases (rows) of ``F`` and ``G`` with
    :math:`F \oplus G = \mathbb R^d`.

    Raises
    ------
    InvalidArgument
        If the two bases together are not a basis of :math:`\mathbb R^d`.
    """

    rows = [list(v) for v in F_basis] + [list(v) for v in G_basis]
    M = np.array([[Fraction(x) for x in row] for row in rows], dtype=object)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise InvalidArgument(f"F_basis and G_basis give {M.shape[0]} vectors of length "
                              f"{M.shape[1] if M.ndim == 2 else '?'}; they must form a basis.")
    inverse = from_fmpq_mat(to_fmpq_mat(M.T).inv())  # c = (Mᵀ)⁻¹ z
    return inverse[:len(F_basis)]
