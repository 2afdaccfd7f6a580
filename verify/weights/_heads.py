r"""One attention head of a BERT checkpoint as the paper's $(Q, K, V)$, taken exactly.

Head $h$ of layer $L$ (PyTorch ``Linear`` weights act as $y = W x$; head $h$ owns rows
$32h, \dots, 32h + 31$ of the query, key and value weights and the same columns of the output
weight) gives, with $d_{head} = 32$, $d_{model} = 384$ for MiniLM,

.. math::

    B = \beta\, W_Q[h]^\top W_K[h], \quad \beta = 1/\sqrt{d_{head}}, \qquad
    V = W_O[:, h]\, W_V[h] \in \mathbb R^{d_{model}\times d_{model}},

the bilinear form and the value map of one head acting alone on the residual stream (the
``"model"`` reading: tokens in $\mathbb R^{d_{model}}$, biases, the other heads, the MLP and the
LayerNorms left out, as in the paper's model (1.1)).  $V$ has rank at most $d_{head}$, so at
least $d_{model} - d_{head}$ of its eigenvalues are exactly 0, and since the non-zero spectra (with
Jordan structure) of $AB$ and $BA$ coincide, the rest is the spectrum of the head-space matrix

.. math::

    V_{head} = W_V[h]\, W_O[:, h] \in \mathbb R^{d_{head} \times d_{head}}.

The ``"head"`` reading is the dynamics restricted to the invariant subspace
$\operatorname{im} W_O[:, h]$: tokens $x = W_O[:, h]\, y$ with $y \in \mathbb R^{d_{head}}$
follow (1.1) with $Q_{head} = W_Q[h] W_O[:, h]$, $K_{head} = W_K[h] W_O[:, h]$ and $V_{head}$.
If $V_{head} u = \lambda u$ with $\lambda \ne 0$ then $\varphi = W_O[:, h] u$ is the eigenvector
of $V$ and $\langle Q\varphi, K\varphi\rangle = \langle Q_{head} u, K_{head} u\rangle$, so both
readings have the same leading eigenvalue, good-triple status, paranormality of $V$ and $k$ of
Conjecture 4.3; they differ in $d$, in the multiplicity of 0 and in $Q^\top K \succ 0$ (never
true in the model reading: $\operatorname{rank} B \le d_{head} < d_{model}$).  Everything is
therefore decided on the $32 \times 32$ head-space matrices with the exact routines of
:mod:`verify.exact` (characteristic polynomial over $\mathbb Q$, factorisation, certified root
balls): the float32 weights are dyadic rationals, taken at their exact value.

Examples
--------
>>> import numpy as np
>>> Q, K, V = head_space_matrices(np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32),
...                               np.diag([2, 1]).astype(np.float32), np.eye(2, dtype=np.float32))
>>> V.tolist()
[[Fraction(2, 1), Fraction(0, 1)], [Fraction(0, 1), Fraction(1, 1)]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.weights._source import Weights

__all__ = ["HeadWeights", "head_weights", "head_space_matrices", "beta_of", "SPACES"]

SPACES = ("model", "head")  #: the two readings of a head (see the module docstring)


def beta_of(d_head: int) -> Fraction:
    r"""$\beta = 1/\sqrt{d_{head}}$ as an exact rational: exact when $d_{head}$ is a square,
    else the binary value of its float64 rounding (relative error $< 2^{-53}$; a positive factor
    changes no hypothesis of the paper, only the time scale of the scores).

    >>> beta_of(16), float(beta_of(32)) == 1 / 32 ** 0.5
    (Fraction(1, 4), True)
    """
    root = math.isqrt(d_head)
    return Fraction(1, root) if root * root == d_head else Fraction(1 / math.sqrt(d_head))


@dataclass(frozen=True)
class HeadWeights:
    """The four weight blocks of head ``head`` of layer ``layer`` (stored dtype, no copy).

    ``W_Q, W_K, W_V`` are ``d_head × d_model``; ``W_O`` is ``d_model × d_head``.
    """

    layer: int
    head: int
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    _exact: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        """``"L.h"``, e.g. ``"3.9"``."""
        return f"{self.layer}.{self.head}"

    @property
    def d_head(self) -> int:
        return self.W_Q.shape[0]

    @property
    def d_model(self) -> int:
        return self.W_Q.shape[1]

    @property
    def beta(self) -> Fraction:
        return beta_of(self.d_head)

    def head_space(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact ``(Q_head, K_head, V_head)`` (``d_head × d_head`` Fractions), cached."""
        if "head" not in self._exact:
            self._exact["head"] = head_space_matrices(self.W_Q, self.W_K, self.W_V, self.W_O)
        return self._exact["head"]


def head_weights(weights: Weights, layer: int, head: int) -> HeadWeights:
    """The blocks of head ``head`` of layer ``layer`` (both 0-based).

    Raises ``InvalidArgument`` naming the range when ``layer`` or ``head`` is out of it.
    """
    n_layers, n_heads, d_head = weights.n_layers, weights.n_heads, weights.d_head
    for name, value, top in (("layer", layer, n_layers), ("head", head, n_heads)):
        if not isinstance(value, int) or not 0 <= value < top:
            raise InvalidArgument(f"{name}={value!r} must be an integer in [0, {top - 1}] "
                                  f"({weights.source} has {n_layers} layers of {n_heads} heads).")
    rows = slice(d_head * head, d_head * (head + 1))
    prefix = f"encoder.layer.{layer}.attention."
    blocks = [weights.tensor(prefix + f"self.{p}.weight")[rows] for p in ("query", "key", "value")]
    W_O = weights.tensor(prefix + "output.dense.weight")[:, rows]
    return HeadWeights(layer, head, *blocks, W_O)


def _integer_matrix(array: np.ndarray):
    """``(M, s)`` with ``array == M / 2**s`` exactly, ``M`` a ``flint.fmpz_mat``."""
    from flint import fmpz_mat

    array = np.asarray(array, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise InvalidArgument("the weights contain NaN or infinite entries.")
    bits = np.finfo(np.float64).nmant + 1
    mantissa, exponent = np.frexp(array)
    low = int(exponent.min()) if array.size else 0
    ints = (mantissa * 2.0 ** bits).astype(np.int64).astype(object) << (exponent - low).astype(
        object)
    rows, cols = array.shape
    return fmpz_mat(rows, cols, [int(v) for v in ints.flat]), bits - low


def _fractions(matrix, shift: int) -> np.ndarray:
    """The Fraction object array of ``matrix / 2**shift`` (``matrix`` a ``flint.fmpz_mat``)."""
    rows, cols = matrix.nrows(), matrix.ncols()
    den = 1 << shift if shift >= 0 else None
    flat = [int(v) for v in matrix.entries()]
    values = [Fraction(v, den) if den else Fraction(v << -shift) for v in flat]
    return np.array(values, dtype=object).reshape(rows, cols)


def head_space_matrices(W_Q, W_K, W_V, W_O) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Exact $(W_Q W_O,\ W_K W_O,\ W_V W_O)$, each $d_{head} \times d_{head}$ (Fractions).

    Every float entry is taken at its exact binary value and the products are formed over
    the integers (FLINT), so nothing is rounded.
    """
    o, so = _integer_matrix(W_O)
    out = []
    for W in (W_Q, W_K, W_V):
        m, s = _integer_matrix(W)
        out.append(_fractions(m * o, s + so))
    return tuple(out)
