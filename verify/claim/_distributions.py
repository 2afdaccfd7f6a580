r"""Structured token distributions: clusters, near ties, exactly symmetric configurations.

These register into :data:`verify.claim._generators.TOKEN_DISTRIBUTIONS` (this module is
imported by :mod:`verify.claim` itself, so importing any part of the package registers them),
with the same conventions: float64
draws enter exactly at their binary value, and each distribution's promise holds exactly where
it says so.

* ``clustered`` — ``k`` centres uniform in ``[-1, 1]^d``; token ``i`` is centre ``i mod k`` plus
  an offset uniform in ``[-spread, spread]^d``;
* ``nearly-tied`` — ``n - 1`` tokens uniform in ``[-1, 1]^d``, then a copy of token 0 with one
  random coordinate ``j`` shifted by exactly ``gap``: for every query ``x_i`` the scores
  ``<Q x_i, K x_0>`` and ``<Q x_i, K x_{n-1}>`` differ by only ``gap · |(Kᵀ Q x_i)_j|``, a near
  tie of the attention (hardmax: a near tie of the argmax);
* ``cross-polytope`` — ``e_1, …, e_d, -e_1, …, -e_d`` (``n = 2d``, integer, exactly symmetric);
* ``hypercube`` — the ``2^d`` vertices ``{±1}^d`` (integer, exactly symmetric);
* ``antipodal`` — ``n/2`` tokens uniform in ``[low, high]^d``, then their exact negatives;
* ``lattice`` — ``n`` distinct points of ``{-k, …, k}^d`` (integers);
* ``sphere-exact`` — points of the unit sphere with rational coordinates (stereographic
  coordinates with a given denominator): exactly of norm 1;
* ``hemisphere`` — the same, in the open hemisphere ``{x_d ≥ margin}``;
* ``circle-angles`` — ``d = 2``: the points at the given rational angles (in turns), or at
  angles in radians given as exact expressions (``radians = ["2*pi/5", "1"]``);
* ``equiangular`` — unit vectors with every ``⟨x_i, x_j⟩ = rho`` exactly (a parameter);
* ``simplex`` — the regular simplex ``e_i − (1/n)·1`` (``d ≥ n``; exact rational, Gram matrix
  exactly equiangular);
* ``repeated`` — ``k`` distinct uniform points, token ``i`` an exact copy of point ``i mod k``;
* ``perturbed`` — a given configuration plus offsets uniform in ``[-eps, eps]^d``;
* ``regular-polygon`` — ``d = 2``: the ``n`` vertices ``(cos 2πj/n, sin 2πj/n)``.  Integer only
  for ``n = 4`` (and ``n = 3`` is not); otherwise float64 values entering exactly.  The
  vertices are built from the first octant by exact sign changes and swaps, so the polygon's
  signed-permutation symmetries (``y ↦ -y``; ``x ↦ -x`` for even ``n``; ``x ↔ y`` when
  ``4 | n``) hold exactly; its other rotations hold only up to rounding.

Examples
--------
>>> import numpy as np
>>> X = TOKEN_DISTRIBUTIONS["cross-polytope"].draw(None, 4, 2, {})
>>> [[int(v) for v in row] for row in X]
[[1, 0], [0, 1], [-1, 0], [0, -1]]
>>> TOKEN_DISTRIBUTIONS["cross-polytope"].requires(5, 2, {})
'needs n = 2d = 4 (got n = 5)'
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from verify.claim._generators import (
    _LOW_HIGH,
    MAX_TRIES,
    TOKEN_DISTRIBUTIONS,
    _low_high,
    _register,
    _uniform,
    exact_array,
)
from verify.errors import InvalidArgument
from verify.exact.linalg import from_fmpq_mat, to_fmpq_mat
from verify.exact.reals import from_sympy, symbolic

__all__: list[str] = []  # everything is registered in TOKEN_DISTRIBUTIONS


def _need_n(expected: int, text: str, n: int | None) -> str | None:
    return None if n is None or n == expected else f"needs n = {text} = {expected} (got n = {n})"


def _need_n_at_least(minimum: int, n: int | None) -> str | None:
    return None if n is None or n >= minimum else f"needs n ≥ {minimum} (got n = {n})"


def _ints(values) -> np.ndarray:
    return exact_array(np.asarray(values, dtype=np.int64))


@_register(TOKEN_DISTRIBUTIONS, "clustered",
           "k centres uniform in [-1, 1]^d; token i = centre (i mod k) + an offset uniform in "
           "[-spread, spread]^d (every cluster is used when n ≥ k).",
           {"k": ("int", 2), "spread": ("number", Fraction(1, 10))},
           lambda n, d, p: (None if p["k"] >= 1 else f"needs k ≥ 1 (got k = {p['k']})") or (
               None if p["spread"] > 0 else f"needs spread > 0 (got spread = {p['spread']})") or (
               None if n is None or p["k"] <= n else f"needs k ≤ n (got k = {p['k']}, n = {n})"))
def _tokens_clustered(rng, n, d, params):
    centres = rng.uniform(-1.0, 1.0, size=(params["k"], d))
    spread = float(params["spread"])
    offsets = rng.uniform(-spread, spread, size=(n, d))
    return exact_array(centres[np.arange(n) % params["k"]] + offsets)


@_register(TOKEN_DISTRIBUTIONS, "nearly-tied",
           "n - 1 tokens uniform in [-1, 1]^d, then a copy of token 0 with one random coordinate "
           "shifted by exactly gap: tokens 0 and n - 1 get nearly tied attention scores.",
           {"gap": ("number", Fraction(1, 1000))},
           lambda n, d, p: _need_n_at_least(2, n) or (
               None if p["gap"] > 0 else f"needs gap > 0 (got gap = {p['gap']})"))
def _tokens_nearly_tied(rng, n, d, params):
    tokens = exact_array(rng.uniform(-1.0, 1.0, size=(n - 1, d)))
    copy = tokens[0].copy()
    axis = int(rng.integers(d))
    copy[axis] = copy[axis] + params["gap"]  # exact rational addition
    return np.concatenate([tokens, copy.reshape(1, d)])


@_register(TOKEN_DISTRIBUTIONS, "cross-polytope",
           "the regular cross-polytope e_1, …, e_d, -e_1, …, -e_d (n = 2d; integer, exactly "
           "symmetric).",
           requires=lambda n, d, p: _need_n(2 * d, "2d", n), deterministic=True)
def _tokens_cross_polytope(rng, n, d, params):
    eye = np.eye(d, dtype=np.int64)
    return _ints(np.concatenate([eye, -eye]))


@_register(TOKEN_DISTRIBUTIONS, "hypercube",
           "the 2^d vertices {±1}^d of the cube (n = 2^d; integer, exactly symmetric).",
           requires=lambda n, d, p: _need_n(2 ** d, "2^d", n) if d <= 62 else
           f"needs d ≤ 62 (got d = {d})", deterministic=True)
def _tokens_hypercube(rng, n, d, params):
    return _ints(list(itertools.product((1, -1), repeat=d)))


@_register(TOKEN_DISTRIBUTIONS, "antipodal",
           "n/2 tokens uniform in [low, high]^d followed by their exact negatives (antipodal "
           "pairs x, -x; n even).", dict(_LOW_HIGH),
           lambda n, d, p: _low_high(n, d, p) or (
               None if n is None or n % 2 == 0 else f"needs an even n (got n = {n})"))
def _tokens_antipodal(rng, n, d, params):
    half = _uniform(rng, params, (n // 2, d))
    return np.concatenate([half, -half])


def _lattice_problem(n, d, p):
    k = p["k"]
    if k < 1:
        return f"needs k ≥ 1 (got k = {k})"
    if n is not None and n > (2 * k + 1) ** d:
        return f"needs n ≤ (2k + 1)^d = {(2 * k + 1) ** d} distinct points (got n = {n})"
    return None


@_register(TOKEN_DISTRIBUTIONS, "lattice",
           "n distinct points of the integer lattice {-k, …, k}^d, uniformly without "
           "replacement (integer coordinates).", {"k": ("int", 1)}, _lattice_problem)
def _tokens_lattice(rng, n, d, params):
    side = 2 * params["k"] + 1
    size = side ** d
    if size <= 10**6:
        codes = rng.choice(size, size=n, replace=False).tolist()
    else:  # huge lattice: rejection, collisions are rare since n ≤ size
        codes, seen = [], set()
        for _ in range(MAX_TRIES * n):
            code = int(rng.integers(size))
            if code not in seen:
                seen.add(code)
                codes.append(code)
                if len(codes) == n:
                    break
        else:
            raise InvalidArgument(f"tokens 'lattice': no {n} distinct points after "
                                  f"{MAX_TRIES * n} draws; this should not happen.")
    rows = [[(code // side ** axis) % side - params["k"] for axis in range(d)] for code in codes]
    return _ints(rows)


def _polygon_vertex(r: Fraction) -> tuple[float, float]:
    """``(cos 2πr, sin 2πr)`` for ``0 ≤ r < 1``, reduced to the first octant exactly."""
    if r > Fraction(1, 2):
        x, y = _polygon_vertex(1 - r)
        return x, -y
    if r > Fraction(1, 4):
        x, y = _polygon_vertex(Fraction(1, 2) - r)
        return -x, y
    if r > Fraction(1, 8):
        x, y = _polygon_vertex(Fraction(1, 4) - r)
        return y, x
    if r == Fraction(1, 8):
        return math.sqrt(0.5), math.sqrt(0.5)
    angle = 2 * math.pi * float(r)
    return math.cos(angle), math.sin(angle)


@_register(TOKEN_DISTRIBUTIONS, "regular-polygon",
           "d = 2: the vertices (cos 2πj/n, sin 2πj/n) of the regular n-gon (n ≥ 3); integer "
           "for n = 4, otherwise float64 values entering exactly, with the signed-permutation "
           "symmetries (axis reflections; diagonals when 4 | n) exact and other rotations only "
           "up to rounding.",
           requires=lambda n, d, p: (None if d == 2 else f"needs d = 2 (got d = {d})") or
           _need_n_at_least(3, n), deterministic=True)
def _tokens_regular_polygon(rng, n, d, params):
    return exact_array(np.array([_polygon_vertex(Fraction(j, n)) for j in range(n)]))



def rational_sphere_point(u) -> list[Fraction]:
    r"""The point of the unit sphere :math:`S^{d-1}` whose stereographic coordinates (from the
    south pole) are the rationals ``u`` (length ``d - 1``): exactly on the sphere,

    .. math:: x = \Bigl(\frac{2u}{1 + |u|^2}, \frac{1 - |u|^2}{1 + |u|^2}\Bigr).

    >>> p = rational_sphere_point([Fraction(1, 2)])
    >>> p, sum(v * v for v in p)
    ([Fraction(4, 5), Fraction(3, 5)], Fraction(1, 1))
    """
    u = [Fraction(v) for v in u]
    s = sum(v * v for v in u)
    return [2 * v / (1 + s) for v in u] + [(1 - s) / (1 + s)]


def _sphere_exact(rng, n: int, d: int, denominator: int) -> list[list[Fraction]]:
    """``n`` points exactly on the sphere from stereographic coordinates with the given
    denominator (a Cauchy-like spread: uniform directions in the image of a Gaussian)."""
    rows = []
    for g in rng.normal(0.0, 1.0, size=(n, d)):
        g = g / np.linalg.norm(g)
        u = g[:-1] / (1.0 + g[-1]) if g[-1] > -1 + 1e-12 else g[:-1] * 1e6
        rows.append(rational_sphere_point([Fraction(round(v * denominator), denominator)
                                           for v in u]))
    return rows


@_register(TOKEN_DISTRIBUTIONS, "sphere-exact",
           "nearly uniform on the unit sphere, every point *exactly* of norm 1 (rational, from "
           "stereographic coordinates with the given denominator), so no unit-norm decimals "
           "are needed.", {"denominator": ("int", 64)},
           lambda n, d, p: (None if d >= 2 else f"needs d ≥ 2 (got d = {d})") or (
               None if p["denominator"] >= 1 else "needs denominator ≥ 1"))
def _tokens_sphere_exact(rng, n, d, params):
    return np.array(_sphere_exact(rng, n, d, params["denominator"]), dtype=object)


@_register(TOKEN_DISTRIBUTIONS, "hemisphere",
           "exactly on the unit sphere and in the open hemisphere {x_d ≥ margin} (0 < margin "
           "< 1): a point below is reflected, one still too low is redrawn.",
           {"margin": ("number", Fraction(1, 10)), "denominator": ("int", 64)},
           lambda n, d, p: (None if d >= 2 else f"needs d ≥ 2 (got d = {d})") or (
               None if 0 < p["margin"] < 1 else "needs 0 < margin < 1"))
def _tokens_hemisphere(rng, n, d, params):
    rows = []
    for _ in range(MAX_TRIES):
        for x in _sphere_exact(rng, n, d, params["denominator"]):
            x = x if x[-1] >= 0 else x[:-1] + [-x[-1]]
            if x[-1] >= params["margin"] and len(rows) < n:
                rows.append(x)
        if len(rows) == n:
            return np.array(rows, dtype=object)
    raise InvalidArgument(f"tokens = 'hemisphere': fewer than {n} points above margin "
                          f"{params['margin']} in {MAX_TRIES} draws; lower the margin.")


def _circle_problem(n, d, p) -> str | None:
    if d != 2:
        return f"needs d = 2 (got d = {d})"
    if p.get("angles") is not None and p.get("radians") is not None:
        return "takes angles (in turns) or radians, not both"
    given = p.get("angles") if p.get("angles") is not None else p.get("radians")
    if given is not None and n is not None and len(given) != n:
        return f"needs one angle per token ({len(given)} angles, n = {n})"
    return None


@_register(TOKEN_DISTRIBUTIONS, "circle-angles",
           "d = 2: points (cos θ, sin θ), one per token: 'angles' in turns (θ = 2π·r, exactly "
           "on the circle when r is a multiple of 1/8, else float64 values of norm 1 up to "
           "rounding; default j/n) or 'radians' (exact expressions such as \"2*pi/5\" or "
           "\"1\": the exact cosines and sines, irrational ones entering at 256 bits).",
           {"angles": ("numbers", None), "radians": ("numbers", None)}, _circle_problem,
           deterministic=True)
def _tokens_circle_angles(rng, n, d, params):
    if params.get("radians") is not None:
        import sympy


        return np.array([[from_sympy(sympy.cos(symbolic(a))), from_sympy(sympy.sin(symbolic(a)))]
                         for a in params["radians"]], dtype=object)
    angles = params["angles"] or [Fraction(j, n) for j in range(n)]
    return exact_array(np.array([_polygon_vertex(Fraction(a) % 1) for a in angles]))


def _equiangular_problem(n, d, p) -> str | None:
    rho = p["rho"]
    if rho is None:
        return "needs its inner product rho (e.g. rho = 0 or rho = \"1/2\")"
    if n is not None and n >= 2 and not -Fraction(1, n - 1) <= rho < 1:
        return f"needs -1/(n - 1) <= rho < 1 (got rho = {rho}, n = {n})"
    if n is not None and d < n:
        return f"needs d ≥ n (got n = {n}, d = {d})"
    return None


def _cayley(rng, d: int) -> list[list[Fraction]]:
    """A random rotation with rational entries: ``(I − A)(I + A)^{-1}`` for a skew ``A`` with
    entries in ``{−1, −3/4, …, 1}`` (exactly orthogonal, determinant 1)."""

    A = np.zeros((d, d), dtype=object)
    for i in range(d):
        for j in range(i + 1, d):
            A[i, j] = Fraction(int(rng.integers(-4, 5)), 4)
            A[j, i] = -A[i, j]
    eye = np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)
    A = A + 0 * eye  # Fractions everywhere
    R = to_fmpq_mat(eye - A) * to_fmpq_mat(eye + A).inv()
    return from_fmpq_mat(R).tolist()


@_register(TOKEN_DISTRIBUTIONS, "equiangular",
           "unit vectors with every ⟨x_i, x_j⟩ = rho exactly (i ≠ j; -1/(n-1) ≤ rho < 1, d ≥ n): "
           "x_i = a e_i + b (1, …, 1, 0, …) with a = √(1 − rho), b = (√(1 + (n−1) rho) − a)/n in "
           "the first n coordinates (exact expressions, irrational ones entering at 256 bits); "
           "rotate = true applies a random rational rotation (exact Cayley transform).",
           {"rho": ("number", None), "rotate": ("bool", False)}, _equiangular_problem,
           deterministic=lambda params: not params["rotate"])
def _tokens_equiangular(rng, n, d, params):
    import sympy


    rho = symbolic(params["rho"])
    a = sympy.sqrt(1 - rho)
    b = (sympy.sqrt(1 + (n - 1) * rho) - a) / n
    rows = [[a * int(i == j) + b if j < n else sympy.Integer(0) for j in range(d)]
            for i in range(n)]
    if params["rotate"]:
        R = _cayley(rng, d)
        rows = [[sympy.expand(sum(sympy.Rational(R[k][j].numerator, R[k][j].denominator) * row[j]
                                  for j in range(d))) for k in range(d)] for row in rows]
    return np.array([[from_sympy(sympy.radsimp(v)) for v in row] for row in rows], dtype=object)


@_register(TOKEN_DISTRIBUTIONS, "simplex",
           "the regular simplex e_i − (1/n)·1 in the first n coordinates (d ≥ n, zeros after; "
           "exact rationals: ⟨x_i, x_j⟩ = −1/n, |x_i|² = (n−1)/n); with unit = true, normalised "
           "in float64 (|x| = 1 up to rounding, for tokens on the sphere).",
           {"unit": ("bool", False)},
           lambda n, d, p: None if n is None or d >= n else f"needs d ≥ n (got n = {n}, d = {d})",
           deterministic=True)
def _tokens_simplex(rng, n, d, params):
    rows = [[Fraction(int(i == j)) - Fraction(1, n) if j < n else Fraction(0) for j in range(d)]
            for i in range(n)]
    if params["unit"]:
        X = np.array([[float(v) for v in row] for row in rows])
        return exact_array(X / np.linalg.norm(X, axis=1, keepdims=True))
    return np.array(rows, dtype=object)


@_register(TOKEN_DISTRIBUTIONS, "repeated",
           "k distinct points uniform in [low, high]^d; token i is an exact copy of point "
           "i mod k (repeated tokens).", dict(_LOW_HIGH, k=("int", 2)),
           lambda n, d, p: _low_high(n, d, p) or (
               None if p["k"] >= 1 and (n is None or p["k"] <= n) else
               f"needs 1 ≤ k ≤ n (got k = {p['k']}, n = {n})"))
def _tokens_repeated(rng, n, d, params):
    points = _uniform(rng, params, (params["k"], d))
    return np.array([points[i % params["k"]] for i in range(n)], dtype=object)


@_register(TOKEN_DISTRIBUTIONS, "perturbed",
           "the given configuration `points` (one row per token, exact) plus offsets uniform in "
           "[-eps, eps]^d (exact at their binary values).",
           {"points": ("rows", None), "eps": ("number", Fraction(1, 100))},
           lambda n, d, p: ("needs its configuration: points = [[...], ...]"
                            if p["points"] is None else
                            None if (n is None or len(p["points"]) == n)
                            and len(p["points"][0]) == d else
                            f"needs {n} points of dimension {d} (got {len(p['points'])} of "
                            f"dimension {len(p['points'][0])})") or (
               None if p["eps"] >= 0 else "needs eps ≥ 0"))
def _tokens_perturbed(rng, n, d, params):
    base = np.array([[Fraction(v) for v in row] for row in params["points"]], dtype=object)
    eps = float(params["eps"])
    return base + exact_array(rng.uniform(-eps, eps, size=(n, d)))
