r"""Seeded generators of weights and initial tokens for random instance families.

Three registries, each ``name -> Generator``:

* :data:`V_GENERATORS` — the value matrix ``V`` (``d×d``);
* :data:`QK_GENERATORS` — the pair ``(Q, K)``, hence the bilinear form $B = Q^\top K$;
* :data:`TOKEN_DISTRIBUTIONS` — the initial tokens ``x(0)`` (``n×d``).

Every random number is a float64 draw from the ``numpy.random.Generator`` passed in, and enters
**exactly at its binary value** (``0.1`` drawn means ``3602879701896397/2**55``); products such
as ``M Mᵀ`` are then formed in exact rational arithmetic, so a generator's promise (symmetric,
positive semidefinite, paranormal, …) holds exactly, not up to rounding.  Parameters are
declared per generator (:attr:`Generator.params`) and validated by the claim loader.

Examples
--------
>>> import numpy as np
>>> V = V_GENERATORS["symmetric-MMt"].draw(np.random.default_rng(0), 2, {}, None)
>>> bool(V[0, 1] == V[1, 0])
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.linalg import exact_det, from_fmpq_mat, to_fmpq_mat
from verify.exact.spectral import good_triple

__all__ = ["Generator", "V_GENERATORS", "QK_GENERATORS", "TOKEN_DISTRIBUTIONS", "MAX_TRIES",
           "exact_array"]

MAX_TRIES = 100  # redraws allowed by the rejection steps (a failure is reported, not hidden)


@dataclass(frozen=True)
class Generator:
    """A named generator: ``draw`` and its declared parameters.

    Attributes
    ----------
    name : str
    draw : callable
        ``V``: ``draw(rng, d, params, B) -> d×d``; ``QK``: ``draw(rng, d, params) -> (Q, K)``;
        tokens: ``draw(rng, n, d, params) -> n×d``.  Arrays are exact (Fractions).
    params : dict
        ``name -> (type, default)`` with type ``"number"`` (exact rational), ``"numbers"`` (a
        list of them), ``"matrix"`` (a square matrix of them), ``"rows"`` (one row of them per
        token), ``"int"`` or ``"bool"``; a
        default of ``None`` means "computed from d".
    requires : callable, optional
        ``requires(n, d, params) -> str | None``: the problem with the shapes, if any.
    summary : str
        One line for ``claims/_format.md`` and ``verify show``.
    deterministic : bool or callable
        Draws nothing (``"identity"``): allowed in explicit families; or
        ``deterministic(params) -> bool`` when the parameters decide it.
    """

    name: str
    draw: Callable
    params: dict = field(default_factory=dict)
    requires: Callable | None = None
    summary: str = ""
    deterministic: bool | Callable = False

    def draws(self, params: dict) -> bool:
        """Whether drawing with ``params`` uses the random generator."""
        fixed = self.deterministic(params) if callable(self.deterministic) else self.deterministic
        return not fixed


V_GENERATORS: dict[str, Generator] = {}
QK_GENERATORS: dict[str, Generator] = {}
TOKEN_DISTRIBUTIONS: dict[str, Generator] = {}


def _register(registry: dict, name: str, summary: str, params: dict | None = None,
              requires: Callable | None = None, deterministic: bool | Callable = False
              ) -> Callable:
    def decorator(function: Callable) -> Callable:
        registry[name] = Generator(name, function, dict(params or {}), requires, summary,
                                   deterministic)
        return function
    return decorator


def exact_array(values: np.ndarray) -> np.ndarray:
    """Object array of Fractions holding the exact binary values of a float (or int) array."""
    return np.vectorize(Fraction, otypes=[object])(np.asarray(values))


def _eye(d: int, scale: int = 1) -> np.ndarray:
    return exact_array(scale * np.eye(d, dtype=int))


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return from_fmpq_mat(to_fmpq_mat(a) * to_fmpq_mat(b))


def _uniform(rng: np.random.Generator, params: dict, size) -> np.ndarray:
    return exact_array(rng.uniform(float(params["low"]), float(params["high"]), size=size))


def _need_d1(n: int | None, d: int, params: dict) -> str | None:
    return None if d == 1 else f"needs d = 1 (got d = {d})"


def _need_d2(n: int | None, d: int, params: dict) -> str | None:
    return None if d >= 2 else f"needs d ≥ 2 (got d = {d})"


def _low_high(n: int | None, d: int, params: dict) -> str | None:
    return None if params["low"] < params["high"] else \
        f"needs low < high (got low = {params['low']}, high = {params['high']})"


_LOW_HIGH = {"low": ("number", Fraction(-1)), "high": ("number", Fraction(1))}


# -- V ---------------------------------------------------------------------------------------
@_register(V_GENERATORS, "identity", "V = I_d.", deterministic=True)
def _v_identity(rng, d, params, B):
    return _eye(d)


@_register(V_GENERATORS, "negative-identity", "V = -I_d.", deterministic=True)
def _v_negative_identity(rng, d, params, B):
    return _eye(d, -1)


@_register(V_GENERATORS, "scalar-positive", "d = 1, V uniform in [low, high] (0 < low).",
           {"low": ("number", Fraction(1, 2)), "high": ("number", Fraction(2))},
           lambda n, d, p: _need_d1(n, d, p) or _low_high(n, d, p) or (
               None if p["low"] > 0 else f"needs low > 0 (got low = {p['low']})"))
def _v_scalar_positive(rng, d, params, B):
    return _uniform(rng, params, (1, 1))


@_register(V_GENERATORS, "random", "entries of V uniform in [low, high].", _LOW_HIGH, _low_high)
def _v_random(rng, d, params, B):
    return _uniform(rng, params, (d, d))


@_register(V_GENERATORS, "symmetric-MMt", "V = M Mᵀ (exact), entries of M uniform in [-1, 1].")
def _v_symmetric(rng, d, params, B):
    M = exact_array(rng.uniform(-1.0, 1.0, size=(d, d)))
    return _matmul(M, M.T)


@_register(V_GENERATORS, "random-good-triple",
           "entries of V uniform in [0, 1] (Perron: λ_1 real, simple, dominant), redrawn until "
           "(Q, K, V) is a certified good triple.")
def _v_good_triple(rng, d, params, B):
    for _ in range(MAX_TRIES):
        V = exact_array(rng.uniform(0.0, 1.0, size=(d, d)))
        if good_triple(B.T, None, V).holds is True:
            return V
    raise InvalidArgument(f"V = 'random-good-triple': no good triple in {MAX_TRIES} draws for "
                          "this QᵀK (<Qφ_1, Kφ_1> kept failing); use QK = 'spd-NNt' or 'identity'.")


@_register(V_GENERATORS, "paranormal",
           "V = diag(λ I_{dim_F}, μ_1, …) with μ_k uniform in [-rho λ, rho λ] (Definition 5.1); "
           "with conjugate = true, V = S D S⁻¹ for S = I + uniform[-1/2, 1/2] (F, G not ⟂).",
           {"lambda": ("number", Fraction(1)), "dim_F": ("int", None),
            "rho": ("number", Fraction(1, 2)), "conjugate": ("bool", False)},
           lambda n, d, p: (None if p["lambda"] > 0 else "needs lambda > 0") or (
               None if 0 < p["rho"] < 1 else "needs 0 < rho < 1") or (
               None if p["dim_F"] is None or 1 <= p["dim_F"] <= d
               else f"needs 1 ≤ dim_F ≤ d = {d} (got dim_F = {p['dim_F']})"))
def _v_paranormal(rng, d, params, B):
    lam, rho = params["lambda"], params["rho"]
    dim_f = params["dim_F"] if params["dim_F"] is not None else max(1, d - 1)
    others = exact_array(rng.uniform(-1.0, 1.0, size=d - dim_f))
    D = _eye(d) * 0
    for i in range(d):
        D[i, i] = lam if i < dim_f else rho * lam * others[i - dim_f]
    return _conjugated(rng, D) if params["conjugate"] else D


def _conjugated(rng, D: np.ndarray) -> np.ndarray:
    """``S D S⁻¹`` for ``S = I + uniform[-1/2, 1/2]`` (exact; redrawn until invertible)."""
    d = D.shape[0]
    for _ in range(MAX_TRIES):
        S = _eye(d) + exact_array(rng.uniform(-0.5, 0.5, size=(d, d)))
        if exact_det(S) != 0:
            return from_fmpq_mat(to_fmpq_mat(S) * to_fmpq_mat(D) * to_fmpq_mat(S).inv())
    raise InvalidArgument("no invertible S found; this should not happen.")


@_register(V_GENERATORS, "eigenvalues",
           "V = S diag(eigenvalues) S⁻¹ with the given real eigenvalues (exact rationals, one "
           "per dimension) and random eigenvectors S = I + uniform[-1/2, 1/2] (exact); "
           "with conjugate = false, V = diag(eigenvalues).",
           {"eigenvalues": ("numbers", None), "conjugate": ("bool", True)},
           lambda n, d, p: None if p["eigenvalues"] is None or len(p["eigenvalues"]) == d
           else f"needs one eigenvalue per dimension ({len(p['eigenvalues'])} given, d = {d})")
def _v_eigenvalues(rng, d, params, B):
    if params["eigenvalues"] is None:
        raise InvalidArgument("V = 'eigenvalues' needs its list: eigenvalues = [...].")
    D = _eye(d) * 0
    for i, value in enumerate(params["eigenvalues"]):
        D[i, i] = Fraction(value)
    return _conjugated(rng, D) if params["conjugate"] else D


def _given_matrix(n, d, p) -> str | None:
    if p["matrix"] is None:
        return "needs its matrix: matrix = [[...], ...]"
    return None if len(p["matrix"]) == d else \
        f"needs a {d}×{d} matrix (got {len(p['matrix'])}×{len(p['matrix'])})"


@_register(V_GENERATORS, "matrix", "V = the given matrix (exact): a search may list several.",
           {"matrix": ("matrix", None)}, _given_matrix, deterministic=True)
def _v_matrix(rng, d, params, B):
    return np.array([[Fraction(v) for v in row] for row in params["matrix"]], dtype=object)


@_register(V_GENERATORS, "complex-leading",
           "V = [[a, -b], [b, a]] ⊕ diag(μ_k), a uniform in [-1, 1], b in [1/4, 1], μ_k uniform "
           "in [-b/2, b/2]: the leading eigenvalues are the pair a ± ib.", requires=_need_d2)
def _v_complex_leading(rng, d, params, B):
    a, b = Fraction(rng.uniform(-1.0, 1.0)), Fraction(rng.uniform(0.25, 1.0))
    others = exact_array(rng.uniform(-0.5, 0.5, size=d - 2))
    V = _eye(d) * 0
    V[0, 0], V[0, 1], V[1, 0], V[1, 1] = a, -b, b, a
    for k in range(d - 2):
        V[k + 2, k + 2] = b * others[k]
    return V


# -- Q, K --------------------------------------------------------------------------------------
@_register(QK_GENERATORS, "identity", "Q = K = I_d.", deterministic=True)
def _qk_identity(rng, d, params):
    return _eye(d), _eye(d)


@_register(QK_GENERATORS, "spd-NNt",
           "Q = K = Nᵀ, so QᵀK = N Nᵀ ≻ 0 (exact), entries of N uniform in [-1, 1], det N ≠ 0.")
def _qk_spd(rng, d, params):
    for _ in range(MAX_TRIES):
        N = exact_array(rng.uniform(-1.0, 1.0, size=(d, d)))
        if exact_det(N) != 0:
            return N.T.copy(), N.T.copy()
    raise InvalidArgument("QK = 'spd-NNt': no invertible N found; this should not happen.")


@_register(QK_GENERATORS, "matrix", "Q = I, K = the given matrix B = QᵀK (exact).",
           {"matrix": ("matrix", None)}, _given_matrix, deterministic=True)
def _qk_matrix(rng, d, params):
    return _eye(d), np.array([[Fraction(v) for v in row] for row in params["matrix"]],
                             dtype=object)


@_register(QK_GENERATORS, "random-uniform",
           "Q = I, K = B: entries of QᵀK uniform in [low, high] (not symmetric in general).",
           _LOW_HIGH, _low_high)
def _qk_uniform(rng, d, params):
    return _eye(d), _uniform(rng, params, (d, d))


# -- tokens -------------------------------------------------------------------------------------
@_register(TOKEN_DISTRIBUTIONS, "uniform", "uniform in [low, high]^d.", _LOW_HIGH, _low_high)
def _tokens_uniform(rng, n, d, params):
    return _uniform(rng, params, (n, d))


@_register(TOKEN_DISTRIBUTIONS, "gaussian", "centred Gaussian with standard deviation scale.",
           {"scale": ("number", Fraction(1))},
           lambda n, d, p: None if p["scale"] > 0 else "needs scale > 0")
def _tokens_gaussian(rng, n, d, params):
    return exact_array(rng.normal(0.0, float(params["scale"]), size=(n, d)))


@_register(TOKEN_DISTRIBUTIONS, "sphere",
           "uniform on the unit sphere (normalised in float64: |x| = 1 up to rounding).")
def _tokens_sphere(rng, n, d, params):
    points = rng.normal(0.0, 1.0, size=(n, d))
    return exact_array(points / np.linalg.norm(points, axis=1, keepdims=True))


@_register(TOKEN_DISTRIBUTIONS, "symmetric-pair",
           "n/2 tokens uniform in [low, high]^d followed by their mirror images under "
           "x[axis] ↦ -x[axis] (exactly symmetric data; axis defaults to the last coordinate).",
           dict(_LOW_HIGH, axis=("int", None)),
           lambda n, d, p: _low_high(n, d, p) or (
               None if n is None or n % 2 == 0 else f"needs an even n (got n = {n})") or (
               None if p["axis"] is None or 0 <= p["axis"] < d
               else f"needs 0 ≤ axis < d = {d} (got axis = {p['axis']})"))
def _tokens_symmetric_pair(rng, n, d, params):
    half = _uniform(rng, params, (n // 2, d))
    mirror = half.copy()
    axis = d - 1 if params["axis"] is None else params["axis"]
    mirror[:, axis] = -mirror[:, axis]
    return np.concatenate([half, mirror])


@_register(TOKEN_DISTRIBUTIONS, "distinct-1d",
           "d = 1: n pairwise distinct tokens uniform in [low, high], sorted increasingly "
           "(the leaders of Theorem 2.1 are then the first and the last token).",
           _LOW_HIGH, lambda n, d, p: _need_d1(n, d, p) or _low_high(n, d, p))
def _tokens_distinct_1d(rng, n, d, params):
    for _ in range(MAX_TRIES):
        values = rng.uniform(float(params["low"]), float(params["high"]), size=n)
        if len(set(values.tolist())) == n:
            return exact_array(np.sort(values).reshape(n, 1))
    raise InvalidArgument(f"tokens 'distinct-1d': no {n} distinct floats in [low, high] after "
                          f"{MAX_TRIES} draws; widen the interval.")
