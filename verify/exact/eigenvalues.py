r"""Exact spectrum of the value matrix $V$: eigenvalues as algebraic numbers with certified balls.

The characteristic and minimal polynomials of $V$ are computed exactly over $\mathbb{Q}$ and
factored into irreducible pieces (python-flint).  Every eigenvalue is then an algebraic number
given by its irreducible polynomial and a certified isolating ball (``acb``); roots of factors of
degree at most ``EXACT_MAX_DEGREE`` also get an exact SymPy expression.  Multiplicities and
Jordan block sizes come from the exponents of the factors and, when these leave a choice, from
exact ranks of $f(V)^k$.  Moduli are compared exactly or from disjoint balls; what cannot be
decided is reported as undecided (``'?'``), never guessed.

Examples
--------
>>> s = spectrum([[0, 1], [2, 0]])
>>> [str(e) for e in s.eigenvalues], s.order, [e.exact for e in s.eigenvalues]
(['1.41421…', '-1.41421…'], ('=',), [sqrt(2), -sqrt(2)])
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.exact._common import fmt, square_rational, working_precision
from verify.exact.linalg import to_fmpq_mat

__all__ = ["Eigenvalue", "Spectrum", "spectrum", "DEFAULT_PREC", "MAX_PREC", "EXACT_MAX_DEGREE"]

DEFAULT_PREC = 128  #: working precision (bits) of the first root isolation
MAX_PREC = 1024  #: precision up to which undecided comparisons are retried
EXACT_MAX_DEGREE = 4  #: irreducible factors up to this degree get exact SymPy roots


def _identity(d: int):
    from flint import fmpq_mat

    eye = fmpq_mat(d, d)
    for i in range(d):
        eye[i, i] = 1
    return eye


@dataclass(frozen=True)
class Eigenvalue:
    r"""One distinct eigenvalue $\lambda$ of $V$, an algebraic number.

    Attributes
    ----------
    enclosure : flint.acb
        Certified ball containing $\lambda$ and no other root of ``minimal_polynomial``.
    minimal_polynomial : flint.fmpz_poly
        The irreducible primitive integer polynomial of which $\lambda$ is a root.
    algebraic_multiplicity, geometric_multiplicity : int
    jordan_blocks : tuple of int
        Sizes of the Jordan blocks of $\lambda$, largest first.
    is_real : bool
        Certified (real roots have an exactly zero imaginary part in the isolation).
    real_part_sign : {1, 0, -1, None}
        Certified sign of $\operatorname{Re}\lambda$; ``None`` when undecided.
    exact : sympy.Expr or None
        Exact value (rational, radical or ``CRootOf``) for factors of small degree.
    modulus_squared : Fraction or None
        $|\lambda|^2$ when it is rational (rational and quadratic non-real eigenvalues).
    """

    enclosure: object
    minimal_polynomial: object
    algebraic_multiplicity: int
    geometric_multiplicity: int
    jordan_blocks: tuple
    is_real: bool
    real_part_sign: int | None
    exact: object
    modulus_squared: Fraction | None
    factor_index: int
    root_index: int

    @property
    def degree(self) -> int:
        """Degree of $\\lambda$ over $\\mathbb{Q}$."""
        return self.minimal_polynomial.degree()

    @property
    def rational(self) -> Fraction | None:
        """The exact value when $\\lambda \\in \\mathbb{Q}$, else ``None``."""
        if self.degree != 1:
            return None
        c0, c1 = (int(c) for c in self.minimal_polynomial.coeffs())
        return Fraction(-c0, c1)

    @property
    def mid(self) -> complex:
        """Midpoint of the enclosure as a Python complex (display only)."""
        return complex(float(self.enclosure.real.mid()), float(self.enclosure.imag.mid()))

    @property
    def radius(self) -> float:
        """Radius of the enclosure (largest of the real and imaginary radii), rounded up."""
        return max(float(self.enclosure.real.rad()), float(self.enclosure.imag.rad()))

    @property
    def modulus(self):
        """Ball enclosing $|\\lambda|$ (``flint.arb``)."""
        return abs(self.enclosure)

    @property
    def is_semisimple(self) -> bool:
        return self.geometric_multiplicity == self.algebraic_multiplicity

    def __str__(self) -> str:
        if self.rational is not None:
            return fmt(self.rational)
        if self.real_part_sign == 0:
            im = fmt(abs(self.enclosure.imag))
            return ("-" if self.enclosure.imag < 0 else "") + ("" if im == "1" else im) + "i"
        return fmt(self.enclosure)


def _neg_poly(f):
    """Primitive polynomial of $-\\lambda$ when $f(\\lambda) = 0$, leading coefficient > 0."""
    from flint import fmpz_poly

    g = fmpz_poly([c if k % 2 == 0 else -c for k, c in enumerate(f.coeffs())])
    return -g if g.coeffs()[-1] < 0 else g


def _is_image(a: Eigenvalue, b: Eigenvalue, sigma: str, roots: tuple) -> bool:
    """Certify ``b == σ(a)`` for σ in {conj, neg, negconj} by ball isolation.

    ``σ(a)`` is a root of ``g`` (``f_a`` or ``f_a(-x)``).  If ``g == f_b``, the balls of the roots
    of ``f_b`` are disjoint and each holds exactly one root, so if ``σ(ball_a)`` meets only the
    ball of ``b``, the root ``σ(a)`` (which is inside ``σ(ball_a)``) must be ``b``.
    """
    g = a.minimal_polynomial if sigma == "conj" else _neg_poly(a.minimal_polynomial)
    if g != b.minimal_polynomial:
        return False
    z = a.enclosure.conjugate() if sigma != "neg" else a.enclosure
    z = -z if sigma != "conj" else z
    hits = [k for k, ball in enumerate(roots[b.factor_index]) if ball.overlaps(z)]
    return hits == [b.root_index]


def _compare_modulus(a: Eigenvalue, b: Eigenvalue, roots: tuple) -> str:
    """'>' , '<', '=' (all certified) or '?' for |a| versus |b|."""
    if a.modulus_squared is not None and b.modulus_squared is not None:
        x, y = a.modulus_squared, b.modulus_squared
        return ">" if x > y else "<" if x < y else "="
    if any(_is_image(a, b, s, roots) for s in ("conj", "neg", "negconj")):
        return "="
    diff = a.modulus - b.modulus
    return ">" if diff > 0 else "<" if diff < 0 else "?"


@dataclass(frozen=True)
class Spectrum:
    r"""The spectrum of $V$: distinct eigenvalues ordered by modulus, with multiplicities.

    Attributes
    ----------
    d : int
    charpoly, minpoly : flint.fmpq_poly
        Exact characteristic and minimal polynomials.
    eigenvalues : tuple of Eigenvalue
        Distinct eigenvalues, sorted so that $|\lambda_1| \ge |\lambda_2| \ge \dots$ (by ball
        midpoint; see ``order``).
    order : tuple of str
        Relation between consecutive moduli: ``'>'`` or ``'='`` certified, ``'?'`` undecided.
    is_diagonalisable : bool
        Exact: the minimal polynomial is squarefree.
    prec : int
        Precision (bits) of the isolating balls.
    """

    d: int
    charpoly: object
    minpoly: object
    eigenvalues: tuple
    order: tuple
    is_diagonalisable: bool
    prec: int
    _roots: tuple = field(repr=False, compare=False)

    @property
    def jordan_blocks(self) -> tuple:
        """Pairs (eigenvalue as a display string, Jordan block sizes), in spectrum order."""
        return tuple((str(e), e.jordan_blocks) for e in self.eigenvalues)

    @property
    def ordering_certified(self) -> bool:
        return "?" not in self.order

    def compare(self, i: int, j: int) -> str:
        """Certified ``'>' '<' '='`` or ``'?'`` (undecided) for $|\\lambda_i|$ vs $|\\lambda_j|$."""
        with working_precision(self.prec):
            return _compare_modulus(self.eigenvalues[i], self.eigenvalues[j], self._roots)

    def leading(self) -> tuple[list, bool]:
        """Eigenvalues certified to share the largest modulus, and whether that set is decided."""
        group, decided = [self.eigenvalues[0]], True
        for j in range(1, len(self.eigenvalues)):
            rel = self.compare(0, j)
            if rel == "=":
                group.append(self.eigenvalues[j])
            elif rel != ">":
                decided = False
        return group, decided


def _poly_at(f, mat):
    """Exact $f(M)$ by Horner (``f`` with integer coefficients)."""
    eye = _identity(mat.nrows())
    out = eye * 0
    for c in reversed(f.coeffs()):
        out = out * mat + eye * int(c)
    return out


def _jordan_blocks(vq, f, alg: int, mini: int) -> tuple:
    if mini == 1:
        return (1,) * alg
    if mini == alg:
        return (alg,)
    if alg - mini == 1:
        return (mini, 1)
    d, m = vq.nrows(), f.degree()
    fv, power, kernel = _poly_at(f, vq), _identity(vq.nrows()), [0]
    for _ in range(mini):
        power = power * fv
        kernel.append(d - power.rank())
    at_least = [(kernel[k] - kernel[k - 1]) // m for k in range(1, mini + 1)] + [0]
    sizes = []
    for k in range(mini, 0, -1):
        sizes += [k] * (at_least[k - 1] - at_least[k])
    return tuple(sizes)


def _box(interval):
    """A SymPy isolating interval (real or complex rectangle) as a flint ball."""
    from flint import acb, arb, fmpq

    def span(lo, hi):
        lo, hi = fmpq(lo.p, lo.q), fmpq(hi.p, hi.q)
        return arb((lo + hi) / 2, (hi - lo) / 2)

    if hasattr(interval, "ax"):
        return acb(span(interval.ax, interval.bx), span(interval.ay, interval.by))
    return acb(span(interval.a, interval.b))


def _exact_roots(f, balls, max_degree: int) -> list:
    """Exact SymPy roots of ``f``, each certified to lie in its ball (``None`` if unmatched).

    Quadratics: the root with $+\\sqrt{D}$ is the larger real root, or the one with positive
    imaginary part.  Higher degrees: ``CRootOf``, matched when its isolating rectangle meets
    exactly one of the disjoint balls (both isolate one root, so that root is shared).
    """
    import sympy

    m = f.degree()
    coeffs = [int(c) for c in f.coeffs()]
    if m == 1:
        return [sympy.Rational(-coeffs[0], coeffs[1])]
    if m > max_degree:
        return [None] * m
    if m == 2:
        c, b, a = coeffs
        plus, minus = ((-b + s * sympy.sqrt(b * b - 4 * a * c)) / (2 * a) for s in (1, -1))
        if balls[0].imag.is_zero():
            upper = 1 if balls[1].real > balls[0].real else 0 if balls[0].real > balls[1].real \
                else None
        else:
            upper = 0 if balls[0].imag > 0 else 1 if balls[1].imag > 0 else None
        return [None] * 2 if upper is None else [plus, minus] if upper == 0 else [minus, plus]
    poly = sympy.Poly(list(reversed(coeffs)), sympy.Symbol("x"))
    out = [None] * m
    for k in range(m):
        root = sympy.CRootOf(poly, k)
        interval = root._get_interval()
        for _ in range(200):
            hits = [j for j, ball in enumerate(balls) if ball.overlaps(_box(interval))]
            if len(hits) == 1:
                out[hits[0]] = root
                break
            interval = interval.refine()
    return out if all(o is not None for o in out) else [None] * m


def _records(factors, prec: int, max_degree: int):
    """Eigenvalue records at one precision; also whether every isolation was clean."""
    from flint import acb, fmpq

    with working_precision(prec):
        roots = []
        for f, *_ in factors:
            if f.degree() == 1:
                c0, c1 = (int(c) for c in f.coeffs())
                roots.append((acb(fmpq(-c0, c1)),))
            else:
                roots.append(tuple(c for c, _ in f.complex_roots()))
        clean = all(not a.overlaps(b) for rs in roots for i, a in enumerate(rs) for b in rs[i + 1:])
        records = []
        for fi, (f, alg, _mini, blocks) in enumerate(factors):
            exact = _exact_roots(f, roots[fi], max_degree)
            coeffs = [int(c) for c in f.coeffs()]
            for ri, ball in enumerate(roots[fi]):
                is_real = ball.imag.is_zero()
                if f.degree() == 1:
                    mod2 = Fraction(coeffs[0], coeffs[1]) ** 2
                elif f.degree() == 2 and not is_real:
                    mod2 = Fraction(coeffs[0], coeffs[2])
                else:
                    mod2 = None
                rec = Eigenvalue(ball, f, alg, len(blocks), blocks, is_real, None, exact[ri],
                                 mod2, fi, ri)
                if coeffs == [0, 1]:
                    sign = 0
                elif ball.real > 0 or ball.real < 0:
                    sign = 1 if ball.real > 0 else -1
                elif not is_real and _is_image(rec, rec, "negconj", tuple(roots)):
                    sign = 0
                else:
                    sign = None
                records.append(rec.__class__(**{**rec.__dict__, "real_part_sign": sign}))
        records.sort(key=lambda e: (-float(e.modulus.mid()), -e.mid.real, -e.mid.imag))
        pairs = zip(records, records[1:], strict=False)
        order = tuple(_compare_modulus(a, b, tuple(roots)) for a, b in pairs)
        order = tuple("?" if r == "<" else r for r in order)
    return tuple(records), order, tuple(roots), clean


@functools.lru_cache(maxsize=64)
def _spectrum_cached(shape, entries, prec, max_prec, max_degree):
    from flint import fmpq_poly

    array = np.array([Fraction(p, q) for p, q in entries], dtype=object).reshape(shape)
    vq = to_fmpq_mat(array)
    charpoly, minpoly = vq.charpoly(), vq.minpoly()
    _, pieces = charpoly.numer().factor()
    factors = []
    for f, alg in pieces:
        f = -f if f.coeffs()[-1] < 0 else f
        fq, rest, mini = fmpq_poly(f.coeffs()), fmpq_poly(minpoly.coeffs()), 0
        while rest % fq == 0:
            rest, mini = rest // fq, mini + 1
        factors.append((f, alg, mini, _jordan_blocks(vq, f, alg, mini)))
    factors.sort(key=lambda t: (t[0].degree(), [int(c) for c in t[0].coeffs()]))
    diag = all(mini == 1 for _, _, mini, _ in factors)
    while True:
        records, order, roots, clean = _records(factors, prec, max_degree)
        undecided = "?" in order or not clean or any(e.real_part_sign is None for e in records)
        if not undecided or prec >= max_prec:
            return Spectrum(shape[0], charpoly, minpoly, records, order, diag, prec, roots)
        prec *= 2


def spectrum(V: object, *, prec: int = DEFAULT_PREC, max_prec: int = MAX_PREC,
             exact_max_degree: int = EXACT_MAX_DEGREE) -> Spectrum:
    r"""Eigenvalues of $V$ with multiplicities, Jordan structure and certified enclosures.

    $\chi_V$ and the minimal polynomial $m_V$ are computed exactly and factored over
    $\mathbb{Q}$; an irreducible factor $f$ with exponent $a$ in $\chi_V$ and $e$ in $m_V$ gives
    $\deg f$ eigenvalues of algebraic multiplicity $a$ whose largest Jordan block has size $e$
    ($V$ is diagonalisable iff $m_V$ is squarefree).  Roots are isolated in certified balls at
    ``prec`` bits; if an ordering or a sign is undecided the precision is doubled up to
    ``max_prec``.

    Parameters
    ----------
    V : array_like, shape (d, d)
        Exact rationals (see :mod:`verify.exact.inputs`).
    prec, max_prec : int
        Initial and largest precision in bits.
    exact_max_degree : int
        Factors up to this degree also get exact SymPy roots.

    Returns
    -------
    Spectrum

    Raises
    ------
    InvalidArgument
        If ``V`` is not square or has a non-finite entry.

    Examples
    --------
    >>> s = spectrum([[2, 0, 0], [0, 0, -1], [0, 1, 0]])
    >>> [str(e) for e in s.eigenvalues], s.order
    (['2', 'i', '-i'], ('>', '='))
    >>> [e.exact for e in s.eigenvalues]
    [2, I, -I]
    >>> spectrum([[1, 1], [0, 1]]).eigenvalues[0].jordan_blocks
    (2,)
    """
    array = square_rational("V", V)
    entries = tuple((v.numerator, v.denominator) for v in array.flat)
    return _spectrum_cached(array.shape, entries, int(prec), int(max_prec), int(exact_max_degree))
