r"""Exact arithmetic: exact inputs, spectra, hull certificates and the set 𝒮, symmetries.

The main names of the submodules are importable from here.  Apart from
:mod:`verify.exact.inputs`, each submodule is loaded on first use of one of its names, so
``import verify.exact`` (done by every ``from verify.exact.inputs import ...``) stays cheap.

* :mod:`~verify.exact.inputs`: exact rationals from user input (:func:`rational_array`);
* :mod:`~verify.exact.linalg`: rank and determinant over :math:`\mathbb{Q}` (FLINT);
* :mod:`~verify.exact.eigenvalues`: :func:`spectrum` (eigenvalues, multiplicities, balls);
* :mod:`~verify.exact.eigenvectors`: :func:`eigenpair` (exact :math:`\varphi, \varphi^*`);
* :mod:`~verify.exact.checks`: :class:`SpectralCheck`, :math:`V = \pm I`,
  :math:`Q^\top K \succ 0`, the count :math:`k`, a complex leading pair;
* :mod:`~verify.exact.spectral`: good triples, paranormality, :func:`spectral_class`;
* :mod:`~verify.exact.hull`: :func:`hull_vertices` with exact certificates;
* :mod:`~verify.exact.polytope`: leader margins, :func:`polytope_S`, :func:`project_along`;
* :mod:`~verify.exact.symmetry_group`: :class:`SymmetryGroup`, its fixed-subspace projection;
* :mod:`~verify.exact.symmetry`: :func:`find_symmetries`.

Examples
--------
>>> from verify.exact import hull_vertices, spectral_summary
>>> spectral_summary(None, None, [[2, 0], [0, 1]])
'good triple (λ_1 = 2); k = 2 eigenvalues with Re > 0'
>>> hull_vertices([[0, 0], [1, 0], [0, 1], ["1/4", "1/4"]])
[0, 1, 2]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from verify.exact.inputs import as_float_array, format_rational, rational_array, to_rational

_LAZY = {
    "verify.exact.linalg": ["to_fmpq_mat", "exact_rank", "exact_det"],
    "verify.exact.eigenvalues": ["Eigenvalue", "Spectrum", "spectrum"],
    "verify.exact.eigenvectors": ["EigenPair", "eigenpair"],
    "verify.exact.checks": [
        "SpectralCheck", "is_identity", "is_negative_identity", "qk_positive_definite",
        "positive_real_part_count", "complex_leading_pair",
    ],
    "verify.exact.spectral": [
        "good_triple", "paranormal", "good_triple_with_multiplicity", "spectral_class",
        "spectral_summary",
    ],
    "verify.exact.hull": ["HullCertificate", "hull_certificate", "hull_vertices"],
    "verify.exact.polytope": [
        "leader_margin", "leaders_exact", "PolytopeS", "polytope_S", "project_along",
    ],
    "verify.exact.symmetry_group": ["Symmetry", "SymmetryGroup"],
    "verify.exact.symmetry": ["find_symmetries"],
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}

if TYPE_CHECKING:  # for static analysis only; at run time __getattr__ loads them
    from verify.exact.checks import (
        SpectralCheck,
        complex_leading_pair,
        is_identity,
        is_negative_identity,
        positive_real_part_count,
        qk_positive_definite,
    )
    from verify.exact.eigenvalues import Eigenvalue, Spectrum, spectrum
    from verify.exact.eigenvectors import EigenPair, eigenpair
    from verify.exact.hull import HullCertificate, hull_certificate, hull_vertices
    from verify.exact.linalg import exact_det, exact_rank, to_fmpq_mat
    from verify.exact.polytope import (
        PolytopeS,
        leader_margin,
        leaders_exact,
        polytope_S,
        project_along,
    )
    from verify.exact.spectral import (
        good_triple,
        good_triple_with_multiplicity,
        paranormal,
        spectral_class,
        spectral_summary,
    )
    from verify.exact.symmetry import find_symmetries
    from verify.exact.symmetry_group import Symmetry, SymmetryGroup

__all__ = [
    "to_rational", "rational_array", "as_float_array", "format_rational",
    "to_fmpq_mat", "exact_rank", "exact_det",
    "Eigenvalue", "Spectrum", "spectrum", "EigenPair", "eigenpair",
    "SpectralCheck", "is_identity", "is_negative_identity", "qk_positive_definite",
    "positive_real_part_count", "complex_leading_pair",
    "good_triple", "paranormal", "good_triple_with_multiplicity", "spectral_class",
    "spectral_summary",
    "HullCertificate", "hull_certificate", "hull_vertices",
    "leader_margin", "leaders_exact", "PolytopeS", "polytope_S", "project_along",
    "Symmetry", "SymmetryGroup", "find_symmetries",
]


def __getattr__(name: str):
    """Load the submodule holding ``name`` on first use (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'verify.exact' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
