r"""Instance families of a claim: the paper's explicit examples and seeded random families.

A family is one ``[[families]]`` table of a claim file (see ``claims/_format.md``).  It names
the weights (explicit exact matrices or a generator of :mod:`verify.claim._generators`), the
initial tokens (an explicit ``x0`` or a distribution), the model variant and the simulation
settings (``horizon``, ``checkpoints``, ``precision``).  :meth:`Family.instance` builds instance
``k`` from ``numpy.random.default_rng(seed + k)``, drawing in a fixed order: per head
``(Q, K)`` then ``V``, then the tokens, then a random MLP weight.

Examples
--------
>>> from verify.claim._family_file import parse_family
>>> fam = parse_family({"name": "square", "kind": "explicit", "V": "identity",
...                     "x0": [[0, 0], [1, 0], [0, 1], [1, 1]], "horizon": 5}, 0, "<doc>")
>>> [inst.name for inst in fam.instances()], fam.d, fam.n
(['square#0'], 2, 4)
>>> fam2 = parse_family({"name": "u", "kind": "random", "count": 3, "seed": 7, "n": 5, "d": 2,
...                      "V": "identity", "QK": "spd-NNt", "tokens": "uniform", "horizon": 5},
...                     1, "<doc>")
>>> [inst.name for inst in fam2.instances(count=2)]
['u#0', 'u#1']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.claim._generators import (
    QK_GENERATORS,
    TOKEN_DISTRIBUTIONS,
    V_GENERATORS,
    _matmul,
)
from verify.errors import InvalidArgument
from verify.exact.plain import to_plain
from verify.model import Instance, Model

__all__ = ["Family", "GeneratorSpec"]

Matrix = tuple  # tuple of tuples of Fraction (exact, hashable)


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator name with its complete, validated parameters."""

    name: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """One instance family of a claim (see the module docstring).

    Attributes
    ----------
    name : str
        Kebab-case, unique within the claim; instances are named ``"<name>#<k>"``.
    kind : {"random", "explicit"}
        ``"explicit"`` draws nothing and has one instance; ``"random"`` draws at least one
        ingredient and has ``count`` instances seeded ``seed + k``.
    count, seed : int, int or None
    d, n : int
        Token dimension and number of tokens.
    V : tuple of tuples of Fraction or GeneratorSpec
    Q, K : tuple of tuples of Fraction or None
        Explicit ``Q``, ``K`` (``None``: identity, unless ``QK`` is a generator).
    QK : GeneratorSpec or None
    tokens : tuple of tuples of Fraction or GeneratorSpec
        The explicit ``x0`` or a token distribution.
    heads : int
    model : dict
        Model options (``beta``, ``form``, ``attention``, ``mask``, ``normalisation``, ``h``,
        ``mlp``), exact numbers as Fractions.
    horizon : Fraction
    checkpoints : int, tuple of Fraction or None
    precision : "float64", "auto" or int (digits)
    description : str
    """

    name: str
    kind: str
    count: int
    seed: int | None
    d: int
    n: int
    V: Matrix | GeneratorSpec
    Q: Matrix | None
    K: Matrix | None
    QK: GeneratorSpec | None
    tokens: Matrix | GeneratorSpec
    heads: int
    model: dict
    horizon: Fraction
    checkpoints: int | tuple | None
    precision: str | int
    description: str = ""

    def seed_of(self, k: int, seed: int | None = None) -> int | None:
        """The seed of instance ``k`` (``None`` for an explicit family)."""
        if self.kind == "explicit":
            return None
        return (self.seed if seed is None else seed) + k

    def instance(self, k: int, seed: int | None = None) -> Instance:
        """Instance ``k`` (named ``"<name>#<k>"``), drawn from ``default_rng(seed + k)``.

        ``seed`` overrides the family's seed (``verify run --seed``).
        """
        if self.kind == "explicit" and k != 0:
            raise InvalidArgument(f"family {self.name!r} is explicit: it has only instance 0 "
                                  f"(got k={k}).")
        if k < 0:
            raise InvalidArgument(f"k={k} must be a non-negative instance index.")
        s = self.seed_of(k, seed)
        if s is not None and s < 0:
            raise InvalidArgument(f"seed={s} must be non-negative (numpy's default_rng).")
        rng = np.random.default_rng(s) if s is not None else None
        options = dict(self.model)
        beta = options.pop("beta", Fraction(1))
        heads = []
        for _ in range(self.heads):
            if self.QK is not None:
                Q, K = _draw_qk(self.QK, rng, self.d)
            else:
                Q, K = (_array(m) if m is not None else _identity(self.d) for m in (self.Q,
                                                                                   self.K))
            if isinstance(self.V, GeneratorSpec):
                V = _draw_v(self.V, rng, self.d, beta * _matmul(Q.T, K))
            else:
                V = _array(self.V)
            heads.append({"V": V, "Q": Q, "K": K})
        x0 = _draw_tokens(self.tokens, rng, self.n, self.d) \
            if isinstance(self.tokens, GeneratorSpec) else _array(self.tokens)
        mlp = options.pop("mlp", None)
        if mlp is not None:
            mlp = dict(mlp)
            W = mlp["W"]
            mlp["W"] = _identity(self.d) if W == "identity" else \
                np.vectorize(Fraction, otypes=[object])(rng.uniform(-1.0, 1.0, (self.d, self.d))) \
                if W == "random" else _array(W)
            if mlp.get("bias") is not None:
                mlp["bias"] = np.array(mlp["bias"], dtype=object)
        if isinstance(options.get("mask"), tuple):
            options["mask"] = np.array(options["mask"], dtype=int)
        try:
            model = Model(heads=heads, beta=beta, mlp=mlp, **options) if self.heads > 1 else \
                Model(**heads[0], beta=beta, mlp=mlp, **options)
            return Instance(model, x0, name=f"{self.name}#{k}")
        except InvalidArgument as exc:
            raise InvalidArgument(f"family {self.name!r}, instance {k}: {exc}") from None

    def instances(self, count: int | None = None, seed: int | None = None) -> list[Instance]:
        """Instances ``0, …, count - 1`` (default ``self.count``; an explicit family always
        gives its single instance).  ``seed`` overrides the family's seed."""
        if self.kind == "explicit":
            return [self.instance(0)]
        count = self.count if count is None else count
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise InvalidArgument(f"count={count!r} must be a positive integer.")
        return [self.instance(k, seed) for k in range(count)]

    def to_json(self) -> dict:
        """The family as a plain dict in the file's own form
        (:func:`verify.claim._family_file.parse_family` reads it back)."""
        out = {"name": self.name, "kind": self.kind, "description": self.description,
               "count": self.count, "seed": self.seed, "n": self.n, "d": self.d,
               "V": _spec_plain(self.V), "Q": to_plain(self.Q), "K": to_plain(self.K),
               "QK": _spec_plain(self.QK), "heads": self.heads, "model": to_plain(self.model),
               "horizon": to_plain(self.horizon), "checkpoints": to_plain(self.checkpoints),
               "precision": self.precision}
        key = "x0" if not isinstance(self.tokens, GeneratorSpec) else "tokens"
        out[key] = _spec_plain(self.tokens, "distribution")
        return {k: v for k, v in out.items() if v is not None}


def _spec_plain(spec, key: str = "generator"):
    if isinstance(spec, GeneratorSpec):
        return {key: spec.name, **to_plain(spec.params)}
    return to_plain(spec)


def _array(matrix: Matrix) -> np.ndarray:
    return np.array(matrix, dtype=object).reshape(len(matrix), -1)


def _identity(d: int) -> np.ndarray:
    return np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)


def _draw_v(spec: GeneratorSpec, rng, d: int, B: np.ndarray) -> np.ndarray:
    return V_GENERATORS[spec.name].draw(rng, d, spec.params, B)


def _draw_qk(spec: GeneratorSpec, rng, d: int) -> tuple[np.ndarray, np.ndarray]:
    return QK_GENERATORS[spec.name].draw(rng, d, spec.params)


def _draw_tokens(spec: GeneratorSpec, rng, n: int, d: int) -> np.ndarray:
    return TOKEN_DISTRIBUTIONS[spec.name].draw(rng, n, d, spec.params)
