r"""Spectral classification of $(Q, K, V)$: good triples, paranormality, the one-line class.

The spectrum of $V$ is computed exactly (:mod:`verify.exact.eigenvalues`: characteristic and
minimal polynomials over $\mathbb{Q}$, irreducible factors, certified isolating balls) and the
leading eigenvectors exactly over $\mathbb{Q}$ or $\mathbb{Q}(\lambda)$
(:mod:`verify.exact.eigenvectors`).  This module reads them: Definition 4.1 (good triple),
Definition 5.1 (paranormal, good triple with multiplicity) and :func:`spectral_class`, which
runs every predicate (the simple ones live in :mod:`verify.exact.checks`).  Every comparison
that decides a predicate is *certified*: it is either exact or read from disjoint balls; what
cannot be decided is reported as undecided (``None``), never guessed.

The names of those modules are re-exported here, so ``from verify.exact.spectral import
spectrum, eigenpair, SpectralCheck`` keeps working.

Examples
--------
>>> spectral_summary(None, None, [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]])
'good triple (λ_1 = 1.34799…); k = 1 eigenvalue with Re > 0'
>>> spectral_summary(None, None, [[1, 1], [0, 1]])
'λ_1 = 1 not simple; k = 2 eigenvalues with Re > 0; non-diagonalisable'
"""

from __future__ import annotations

import numpy as np

from verify.exact._common import (
    fmpq_of,
    fmt,
    square_rational,
    to_fraction_array,
    working_precision,
)
from verify.exact.checks import (
    SpectralCheck,
    _form,
    complex_leading_pair,
    is_identity,
    is_negative_identity,
    positive_real_part_count,
    qk_positive_definite,
)
from verify.exact.eigenvalues import Eigenvalue, Spectrum, spectrum
from verify.exact.eigenvectors import (
    FIELD_MAX_DIM,
    EigenPair,
    _eval,
    _Field,
    _kernel_and_image,
    _sign,
    eigenpair,
)
from verify.exact.linalg import to_fmpq_mat

__all__ = [
    "Eigenvalue", "Spectrum", "EigenPair", "SpectralCheck", "spectrum", "eigenpair",
    "is_identity", "is_negative_identity", "qk_positive_definite", "good_triple", "paranormal",
    "good_triple_with_multiplicity", "positive_real_part_count", "complex_leading_pair",
    "spectral_class", "spectral_summary",
]


def _and(*values):
    return False if False in values else None if None in values else True


def _leading_reason(spec: Spectrum):
    """(λ_1, None) if λ_1 is real, positive, simple and dominant, else (None, check args)."""
    group, decided = spec.leading()
    top = group[0]
    if len(group) > 1:
        names = ", ".join(str(e) for e in group)
        return None, (False, f"the eigenvalues {names} share the largest modulus "
                      f"{fmt(top.modulus)}, so λ_1 is not strictly dominant.")
    if top.algebraic_multiplicity > 1:
        return None, (False, f"λ_1 = {top} is not simple (algebraic multiplicity "
                      f"{top.algebraic_multiplicity}, Jordan blocks {list(top.jordan_blocks)}).")
    if not top.is_real:
        return None, (False, f"the eigenvalue of largest modulus λ_1 = {top} is not real.")
    if top.real_part_sign != 1:
        return None, (False if top.real_part_sign is not None else None,
                      f"λ_1 = {top} is not positive.")
    if not decided:
        return None, (None, f"undecided: |λ_1| = {fmt(top.modulus)} could not be separated "
                      "from another modulus at the working precision.")
    return top, None


def _second_modulus(spec: Spectrum):
    rest = spec.eigenvalues[1:]
    return rest[0].modulus if rest else None


def good_triple(Q: object, K: object, V: object) -> SpectralCheck:
    r"""Whether $(Q, K, V)$ is a good triple (Definition 4.1).

    The eigenvalue of largest modulus is real, positive and simple, $\lambda_1 > |\lambda_2|$,
    and $\langle Q\varphi_1, K\varphi_1\rangle > 0$.  ``None`` for Q and K means the identity.

    Examples
    --------
    >>> g = good_triple(None, None, [[2, 0], [0, -1]])
    >>> g.holds, g.value
    (True, Fraction(2, 1))
    >>> good_triple(None, None, [[1, 1], [0, 1]]).explanation
    'not a good triple: λ_1 = 1 is not simple (algebraic multiplicity 2, Jordan blocks [2]).'
    """
    array = square_rational("V", V)
    spec = spectrum(array)
    b = _form(Q, K, array.shape[0])
    top, reason = _leading_reason(spec)
    if top is None:
        return SpectralCheck("good triple", reason[0], f"not a good triple: {reason[1]}"
                             if reason[0] is False else reason[1], data={"spectrum": spec})
    pair = eigenpair(array, 0)
    value = top.rational if top.rational is not None else top.enclosure.real
    if pair.exact:
        bmat = to_fraction_array(b)
        if pair.field is None:
            q = sum(pair.right[i] * bmat[i, j] * pair.right[j]
                    for i in range(len(pair.right)) for j in range(len(pair.right)))
            sign, shown = (q > 0) - (q < 0), fmt(q)
            fld = None
        else:
            fld = _Field(pair.field)
            bv = [sum((pair.right[j] * fmpq_of(bmat[i, j]) for j in range(len(pair.right))),
                      pair.right[0] * 0) for i in range(len(pair.right))]
            q = fld.dot(pair.right, bv)
            sign = _sign(q, top, fld, spec.prec)
            with working_precision(spec.prec):
                shown = fmt(_eval(q, top.enclosure.real))
    else:
        from flint import arb

        with working_precision(spec.prec):
            bmat = to_fraction_array(b)
            r = pair.right_enclosure
            q = sum((r[i] * arb(fmpq_of(bmat[i, j])) * r[j]
                     for i in range(len(r)) for j in range(len(r))), arb(0))
            sign = 1 if q > 0 else -1 if q < 0 else None
            shown = fmt(q)
    second = _second_modulus(spec)
    lead = f"λ_1 = {fmt(value)} is real, positive, simple and λ_1 > |λ_2| = " + (
        fmt(second) if second is not None else "(none)")
    data = {"spectrum": spec, "eigenpair": pair, "qk_phi": q}
    if sign == 1:
        return SpectralCheck("good triple", True, f"good triple: {lead}, and "
                             f"<Qφ_1, Kφ_1> = {shown} > 0.", value, data)
    if sign is None:
        return SpectralCheck("good triple", None, f"undecided: {lead}, but the sign of "
                             f"<Qφ_1, Kφ_1> ∈ {shown} is not certified.", value, data)
    return SpectralCheck("good triple", False, f"not a good triple: {lead}, but "
                         f"<Qφ_1, Kφ_1> = {shown} ≤ 0.", value, data)


def _bilinear_zero(xs: list, bmat, ys: list, fld: _Field | None) -> bool:
    """Exactly whether $x^\\top B y = 0$ for all pairs (``bmat`` None: the identity)."""
    if not xs or not ys:
        return True
    if fld is None:
        x = to_fmpq_mat(np.array(xs, dtype=object))
        y = to_fmpq_mat(np.array(ys, dtype=object)).transpose()
        prod = x * y if bmat is None else x * to_fmpq_mat(bmat) * y
        return all(prod[i, j] == 0 for i in range(prod.nrows()) for j in range(prod.ncols()))
    d = len(ys[0])
    for y in ys:
        by = y if bmat is None else [sum((y[j] * fmpq_of(bmat[i, j]) for j in range(d)), y[0] * 0)
                                     for i in range(d)]
        if any(fld.dot(x, by) != 0 for x in xs):
            return False
    return True


def paranormal(V: object, *, field_max_dim: int = FIELD_MAX_DIM) -> SpectralCheck:
    r"""Whether $V$ is paranormal (Definition 5.1), with the splitting $F \oplus G$.

    $V$ is paranormal iff its eigenvalue $\lambda$ of largest modulus is real, positive,
    strictly dominant and semisimple; then $F = \ker(V - \lambda I)$, $G = \operatorname{im}(V -
    \lambda I)$ (the sum of the other generalised eigenspaces) and $\rho(V|_G) = |\lambda_2|$.

    Returns
    -------
    SpectralCheck
        ``value`` is $\lambda$; ``data`` holds ``dim_F``, ``F_basis``, ``G_basis`` (exact
        vectors, or ``None`` for irrational $\lambda$ with $d >$ ``field_max_dim``),
        ``spectral_radius_G`` (a ball, 0 if $G = 0$), ``orthogonal`` ($F \perp G$: bool or
        ``None``) and ``field`` (minimal polynomial of $\lambda$ when the bases lie in
        $\mathbb{Q}(\lambda)$).

    Examples
    --------
    >>> p = paranormal([[1, 0, 0], [0, 1, 0], [0, 0, "-1/2"]])
    >>> p.holds, p.value, p.data["dim_F"], p.data["orthogonal"]
    (True, Fraction(1, 1), 2, True)
    """
    array = square_rational("V", V)
    spec = spectrum(array)
    group, decided = spec.leading()
    top = group[0]
    reason = None
    if len(group) == 1 and top.is_real and top.real_part_sign == 1 and decided:
        if not top.is_semisimple:
            reason = (False, f"λ = {top} is not semisimple (Jordan blocks "
                      f"{list(top.jordan_blocks)}), so V|_F = λI has no invariant complement G.")
    else:
        reason = _leading_reason(spec)[1]
    if reason is not None:
        return SpectralCheck("paranormal", reason[0], f"not paranormal: {reason[1]}"
                             if reason[0] is False else reason[1], data={"spectrum": spec})
    d, dim_f = array.shape[0], top.geometric_multiplicity
    basis_f = basis_g = orth = fld = None
    if top.rational is not None or d <= field_max_dim:
        fld = _Field(top.minimal_polynomial) if top.rational is None else None
        basis_f, basis_g = _kernel_and_image(array, top.rational, fld)
        orth = _bilinear_zero(basis_f, None, basis_g, fld)
    elif all(array[i, j] == array[j, i] for i in range(d) for j in range(i)):
        orth = True  # V symmetric: eigenspaces of distinct eigenvalues are orthogonal
    elif dim_f == 1:  # F ⊥ G iff φ ∥ φ*; only a certified "no" is possible from balls
        pair = eigenpair(array, 0)
        r, l_ = pair.right_enclosure, pair.left_enclosure
        with working_precision(spec.prec):
            if any(not (r[i] * l_[j] - r[j] * l_[i]).contains(0)
                   for i in range(d) for j in range(i)):
                orth = False
    rho = _second_modulus(spec) if dim_f < d else None
    value = top.rational if top.rational is not None else top.enclosure.real
    text = (f"paranormal: λ = {fmt(value)} > 0 is semisimple with dim F = {dim_f}, "
            f"ρ(V|_G) = {fmt(rho) if rho is not None else 0} < λ, and "
            + {True: "F ⊥ G", False: "F is not orthogonal to G",
               None: "whether F ⊥ G is undecided"}[orth] + ".")
    return SpectralCheck("paranormal", True, text, value, {
        "spectrum": spec, "dim_F": dim_f, "F_basis": basis_f, "G_basis": basis_g,
        "spectral_radius_G": rho if rho is not None else 0, "orthogonal": orth,
        "field": top.minimal_polynomial if fld else None})


def good_triple_with_multiplicity(Q: object, K: object, V: object) -> SpectralCheck:
    r"""Definition 5.1: $Q^\top K \succ 0$ and $V$ paranormal.

    ``data`` also reports whether $F \perp G$ and whether $Q^\top K$ is block-diagonal in the
    splitting ($F^\top B G = 0$ and $G^\top B F = 0$): not hypotheses, but the open point of
    Theorem 5.2.

    Examples
    --------
    >>> g = good_triple_with_multiplicity([[1, 0], [0, 1]], [[2, 1], [1, 2]], [[1, 0], [0, 0]])
    >>> g.holds, g.data["block_diagonal"], g.data["orthogonal"]
    (True, False, True)
    """
    array = square_rational("V", V)
    para = paranormal(array)
    b = _form(Q, K, array.shape[0])
    pd = qk_positive_definite(to_fraction_array(b), None) if Q is not None or K is not None \
        else SpectralCheck("QᵀK ≻ 0", True, "QᵀK = I.")
    data = dict(para.data, qk_positive_definite=pd, block_diagonal=None)
    if para.holds and para.data["F_basis"] is not None:
        bmat = to_fraction_array(b)
        fld = _Field(para.data["field"]) if para.data["field"] is not None else None
        f_, g_ = para.data["F_basis"], para.data["G_basis"]
        data["block_diagonal"] = _bilinear_zero(f_, bmat, g_, fld) and _bilinear_zero(
            g_, bmat, f_, fld)
    holds = _and(para.holds, pd.holds)
    text = f"{para.explanation} {pd.explanation}"
    if data["block_diagonal"] is not None:
        text += " QᵀK is " + ("" if data["block_diagonal"] else "not ") + \
            "block-diagonal in F ⊕ G."
    return SpectralCheck("good triple with multiplicity", holds, text, para.value, data)


def spectral_class(Q: object, K: object, V: object) -> dict:
    r"""Every spectral predicate at once, with a one-line ``summary``.

    ``None`` for Q and K means $Q = K = I$.  Keys: ``identity``, ``negative_identity``,
    ``good_triple``, ``paranormal``, ``complex_leading_pair``, ``positive_real_part_count``,
    ``qk_positive_definite`` (``SpectralCheck`` objects), ``diagonalisable`` (bool),
    ``jordan_blocks`` (pairs), ``spectrum`` and ``summary`` (str).

    Examples
    --------
    >>> spectral_class(None, None, [[1, 0, 0], [0, 1, 0], [0, 0, "-1/2"]])["summary"]
    'paranormal, dim F = 2; k = 2 eigenvalues with Re > 0'
    """
    array = square_rational("V", V)
    spec = spectrum(array)
    out = {"identity": is_identity(array), "negative_identity": is_negative_identity(array),
           "good_triple": good_triple(Q, K, array), "paranormal": paranormal(array),
           "complex_leading_pair": complex_leading_pair(array),
           "positive_real_part_count": positive_real_part_count(array),
           "qk_positive_definite": qk_positive_definite(Q, K),
           "diagonalisable": spec.is_diagonalisable, "jordan_blocks": spec.jordan_blocks,
           "spectrum": spec}
    labels = []
    if out["identity"]:
        labels.append("V = I")
    elif out["negative_identity"]:
        labels.append("V = -I")
    else:
        if out["good_triple"]:
            labels.append(f"good triple (λ_1 = {fmt(out['good_triple'].value)})")
        elif out["paranormal"]:
            labels.append(f"paranormal, dim F = {out['paranormal'].data['dim_F']}")
        elif out["complex_leading_pair"]:
            labels.append("complex leading pair")
        else:
            reason = _leading_reason(spec)[1]
            if reason is not None:
                labels.append(_short(reason[1]))
        count = out["positive_real_part_count"]
        labels.append("k undecided" if count.value is None else
                      f"k = {count.value} eigenvalue{'s' if count.value != 1 else ''} with Re > 0")
        if not spec.is_diagonalisable:
            labels.append("non-diagonalisable")
    out["summary"] = "; ".join(labels)
    return out


def _short(reason: str) -> str:
    """A summary label from a failure sentence of :func:`_leading_reason`."""
    head = reason.split(" (")[0].split(", so")[0].rstrip(".")
    return head.replace(" is not ", " not ").replace("the eigenvalue of largest modulus ", "")


def spectral_summary(Q: object, K: object, V: object) -> str:
    """The one-line class of $V$ printed by ``verify simulate`` (see :func:`spectral_class`).

    Examples
    --------
    >>> spectral_summary(None, None, [[1, 0], [0, 1]])
    'V = I'
    """
    return spectral_class(Q, K, V)["summary"]
