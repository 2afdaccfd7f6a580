r"""The outcome record :class:`SpectralCheck` and the spectral predicates needing no eigenvector.

Each predicate returns a :class:`SpectralCheck` whose ``holds`` is ``True``, ``False`` or
``None`` (undecided: the certified enclosures could not separate the cases).  Here: $V = \pm I$
(exact entries), $B = Q^\top K \succ 0$ (exact characteristic polynomial), the count $k$ of
eigenvalues with positive real part and a non-real leading pair (certified balls of
:func:`verify.exact.eigenvalues.spectrum`).

Examples
--------
>>> c = positive_real_part_count([[0, -1], [1, 0]])
>>> c.holds, c.value, str(c)
(False, 0, 'k = 0 eigenvalues of V (with multiplicity) have positive real part.')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact._common import fmt, square_rational, to_fraction_array
from verify.exact.eigenvalues import spectrum
from verify.exact.inputs import rational_array
from verify.exact.linalg import to_fmpq_mat

__all__ = [
    "SpectralCheck", "identity_multiple", "is_identity", "is_negative_identity",
    "qk_positive_definite",
    "positive_real_part_count", "complex_leading_pair",
]


@dataclass(frozen=True)
class SpectralCheck:
    """Outcome of a named spectral predicate.

    Truthy exactly when ``holds is True``; ``holds is None`` means *undecided* (the certified
    enclosures could not separate the cases), which is falsy but must not be read as "fails".

    Attributes
    ----------
    name : str
    holds : bool or None
    explanation : str
        One sentence with the numbers that decide it.
    value : object
        The main datum (λ_1, k, …) or ``None``.
    data : dict
        Further data (bases, spectral radii, …).
    """

    name: str
    holds: bool | None
    explanation: str
    value: object = None
    data: dict = field(default_factory=dict, compare=False)

    def __bool__(self) -> bool:
        return self.holds is True

    def __str__(self) -> str:
        return self.explanation


def _is_scalar(V, scalar: int, name: str) -> SpectralCheck:
    array = square_rational("V", V)
    for (i, j), v in np.ndenumerate(array):
        want = scalar if i == j else 0
        if v != want:
            return SpectralCheck(name, False, f"V[{i}, {j}] = {fmt(v)} ≠ {want}.")
    return SpectralCheck(name, True, f"V = {'-' if scalar < 0 else ''}I_{array.shape[0]} exactly.")


def identity_multiple(V: object) -> Fraction | None:
    """The scalar ``c`` when ``V = c I`` exactly, else ``None``.

    Examples
    --------
    >>> identity_multiple([[2, 0], [0, 2]]), identity_multiple([[1, 1], [0, 1]])
    (Fraction(2, 1), None)
    """
    array = square_rational("V", V)
    c = array[0, 0]
    if any(v != (c if i == j else 0) for (i, j), v in np.ndenumerate(array)):
        return None
    return Fraction(c)


def is_identity(V: object) -> SpectralCheck:
    """Whether $V = I_d$ exactly.

    Examples
    --------
    >>> is_identity([[1, 0], [0, "1.0"]]).holds, is_identity([[1, "1/2"], [0, 1]]).explanation
    (True, 'V[0, 1] = 1/2 ≠ 0.')
    """
    return _is_scalar(V, 1, "V = I")


def is_negative_identity(V: object) -> SpectralCheck:
    """Whether $V = -I_d$ exactly.

    Examples
    --------
    >>> bool(is_negative_identity([[-1, 0], [0, -1]]))
    True
    """
    return _is_scalar(V, -1, "V = -I")


def _form(Q: object, K: object, d: int | None = None):
    """Exact $B = Q^\\top K$ as ``fmpq_mat``; a ``None`` factor means the identity $I_d$."""
    arrays = {name: rational_array(name, value)[0]
              for name, value in (("Q", Q), ("K", K)) if value is not None}
    if d is None:
        d = next(iter(arrays.values())).shape[1]
    eye = np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)
    q, k = arrays.get("Q", eye), arrays.get("K", eye)
    if q.shape != k.shape or q.shape[1] != d:
        raise InvalidArgument(
            f"Expected Q and K of one shape (k, d) with d = {d} but got Q.shape={q.shape}, "
            f"K.shape={k.shape}; both act on R^d, so each needs d columns (None means I_d).")
    return to_fmpq_mat(q).transpose() * to_fmpq_mat(k)


def qk_positive_definite(Q: object, K: object) -> SpectralCheck:
    r"""Whether $B = Q^\top K$ is symmetric positive definite, decided exactly.

    Symmetry is exact equality $B = B^\top$.  For symmetric $B$ all eigenvalues are real, so
    $B \succ 0$ iff the coefficients of $\det(xI - B)$ strictly alternate in sign.

    Examples
    --------
    >>> qk_positive_definite([[1, 0], [0, 1]], [[2, 1], [1, 2]]).holds
    True
    >>> qk_positive_definite(None, [[1, 2], [0, 1]]).explanation
    'QᵀK is not symmetric: B[0, 1] = 2 ≠ B[1, 0] = 0.'
    """
    if Q is None and K is None:
        return SpectralCheck("QᵀK ≻ 0", True, "QᵀK = I.", data={"B": None})
    b = _form(Q, K)
    n = b.nrows()
    for i in range(n):
        for j in range(i + 1, n):
            if b[i, j] != b[j, i]:
                return SpectralCheck(
                    "QᵀK ≻ 0", False, f"QᵀK is not symmetric: B[{i}, {j}] = {b[i, j]} ≠ "
                    f"B[{j}, {i}] = {b[j, i]}.", data={"B": to_fraction_array(b)})
    coeffs = b.charpoly().coeffs()
    ok = all(c != 0 and (c > 0) == ((n - k) % 2 == 0) for k, c in enumerate(coeffs))
    data = {"B": to_fraction_array(b)}
    if ok:
        return SpectralCheck("QᵀK ≻ 0", True, "QᵀK is symmetric and its characteristic "
                             "polynomial has strictly alternating coefficients, so QᵀK ≻ 0.",
                             data=data)
    low = spectrum(data["B"]).eigenvalues
    smallest = min((e for e in low), key=lambda e: e.mid.real)
    return SpectralCheck("QᵀK ≻ 0", False, f"QᵀK is symmetric but has the eigenvalue "
                         f"{smallest} ≤ 0.", value=smallest, data=data)


def positive_real_part_count(V: object) -> SpectralCheck:
    r"""The $k$ of Conjecture 4.3: eigenvalues with $\operatorname{Re}\lambda > 0$, with
    multiplicity (certified).  Holds when $k \ge 1$; ``value`` is $k$ (``None`` if undecided).

    Examples
    --------
    >>> positive_real_part_count([[1, 0, 0], [0, 2, 0], [0, 0, -3]]).value
    2
    """
    spec = spectrum(V)
    undecided = [e for e in spec.eigenvalues if e.real_part_sign is None]
    if undecided:
        return SpectralCheck("k ≥ 1", None, "undecided: the real part of "
                             f"{undecided[0]} could not be separated from 0.",
                             data={"spectrum": spec})
    k = sum(e.algebraic_multiplicity for e in spec.eigenvalues if e.real_part_sign == 1)
    return SpectralCheck("k ≥ 1", k >= 1, f"k = {k} eigenvalue{'s' if k != 1 else ''} of V "
                         f"(with multiplicity) have positive real part.", k, {"spectrum": spec})


def complex_leading_pair(V: object) -> SpectralCheck:
    """Whether the eigenvalues of largest modulus are exactly one non-real conjugate pair.

    Examples
    --------
    >>> complex_leading_pair([[0, -2, 0], [2, 0, 0], [0, 0, 1]]).explanation
    'the eigenvalues of largest modulus are the conjugate pair ± 2i (|λ| = 2).'
    """
    spec = spectrum(V)
    group, decided = spec.leading()
    top = group[0]
    if len(group) > 2:
        return SpectralCheck("complex leading pair", False, "more than two eigenvalues ("
                             + ", ".join(map(str, group)) + ") share the largest modulus.",
                             data={"spectrum": spec})
    if top.is_real or (len(group) == 2 and group[1].is_real):
        real = top if top.is_real else group[1]
        return SpectralCheck("complex leading pair", False, f"the eigenvalue {real} of largest "
                             "modulus is real.", data={"spectrum": spec})
    if not decided:
        return SpectralCheck("complex leading pair", None, f"undecided: |{top}| could not be "
                             "separated from another modulus.", data={"spectrum": spec})
    re = "" if top.real_part_sign == 0 else f"{fmt(top.enclosure.real)} "
    text = (f"the eigenvalues of largest modulus are the conjugate pair {re}± "
            f"{fmt(abs(top.enclosure.imag))}i (|λ| = {fmt(top.modulus)}).")
    return SpectralCheck("complex leading pair", True, text, top, {"spectrum": spec})
