r"""The exact instance a certificate is about, read back from its text, and its symmetries.

A certificate names its model (``V``, ``Q``, ``K``, ``β``, the variant; for a graph mask, its
``n×n`` 0/1 adjacency ``mask_matrix``) and the initial tokens as exact rationals.
:func:`read_instance` checks them and computes :math:`B = \beta Q^\top K` exactly
(``fractions.Fraction``); :meth:`ExactInstance.attends` says which tokens a token attends to.
:func:`check_symmetries` verifies, exactly, that each listed signed permutation :math:`S`
(with its token permutation :math:`\pi`) satisfies :math:`SV = VS`,
:math:`S^\top B S = B` and :math:`S x_i(0) = x_{\pi(i)}(0)`: then the exact solution satisfies
:math:`S x_i(t) = x_{\pi(i)}(t)` for all :math:`t` (uniqueness of solutions: both sides solve
the same equation from the same data; see :mod:`verify.exact.symmetry`), so a token fixed by
:math:`\pi` lies in the fixed space of :math:`S` forever. :func:`fixed_space_is_zero` decides
when those constraints pin a token at the origin.

Only the standard library and python-flint are imported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from verify.lemmas._balls import CheckFailure, rational

__all__ = ["ExactInstance", "read_instance", "check_symmetries", "pinned_tokens"]


@dataclass(frozen=True)
class ExactInstance:
    """The exact data of a certificate: ``V`` (``d×d``), ``B = βQᵀK``, ``x0`` (``n×d``), all
    lists of lists of Fractions, and the variant."""

    V: list
    B: list
    x0: list
    beta: Fraction
    form: str
    attention: str
    mask: str
    normalisation: str
    heads: int
    mlp: object
    #: the graph mask's rows (``mask == "adjacency"``), else ``None``
    adjacency: tuple | None = None

    @property
    def n(self) -> int:
        return len(self.x0)

    @property
    def d(self) -> int:
        return len(self.V)

    def scalar_value(self) -> Fraction | None:
        """``λ`` when ``V = λ I`` exactly, else ``None``."""
        lam = self.V[0][0]
        if all(self.V[a][b] == (lam if a == b else 0) for a in range(self.d)
               for b in range(self.d)):
            return lam
        return None

    def attends(self, i: int) -> list[int]:
        """The tokens ``j`` that token ``i`` attends to (``M_ij = 1``): every token, the
        ``j <= i`` (causal), or the graph mask's row."""
        if self.mask == "causal":
            return list(range(i + 1))
        if self.mask == "adjacency":
            return [j for j in range(self.n) if self.adjacency[i][j]]
        return list(range(self.n))

    def self_only_tokens(self) -> list[int]:
        """The tokens whose mask row is themselves alone (each a closed set of one token)."""
        return [i for i in range(self.n) if self.attends(i) == [i]]

    def closed(self, tokens) -> bool:
        """Whether no token of ``tokens`` attends outside it (the set is closed under the
        mask: it evolves on its own)."""
        members = set(tokens)
        return all(set(self.attends(i)) <= members for i in members)

    def plain(self) -> list[str]:
        """How the variant departs from the paper's model (1.1): one softmax head, full
        attention, no normalisation, no MLP."""
        out = []
        if self.heads != 1:
            out.append(f"{self.heads} heads")
        if self.attention != "softmax":
            out.append(f"attention={self.attention!r}")
        if self.mask != "full":
            out.append("a mask")
        if self.normalisation != "none":
            out.append(f"normalisation={self.normalisation!r}")
        if self.mlp is not None:
            out.append("an MLP")
        return out


def _matrix(rows, name: str) -> list:
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        raise CheckFailure(f"{name} must be a non-empty list of rows of rationals.")
    out = [[rational(v) for v in row] for row in rows]
    if len({len(r) for r in out}) != 1:
        raise CheckFailure(f"{name} has rows of different lengths.")
    return out


def read_instance(data: dict) -> ExactInstance:
    """The exact instance of a certificate (``data["instance"]``)."""
    try:
        inst = data["instance"]
        model = inst["model"]
        V = _matrix(inst["V"], "V")
        Q = _matrix(inst["Q"], "Q")
        K = _matrix(inst["K"], "K")
        x0 = _matrix(inst["x0"], "x0")
        beta = rational(model["beta"])
    except (KeyError, TypeError) as exc:
        raise CheckFailure(f"the certificate's instance is incomplete: missing {exc}.") from None
    d = len(V)
    if any(len(r) != d for r in V) or len(Q[0]) != d or len(K[0]) != d or len(Q) != len(K) \
            or len(x0[0]) != d:
        raise CheckFailure("the shapes of V, Q, K, x0 do not fit (V d×d, Q and K k×d, x0 n×d).")
    B = [[beta * sum((Q[r][a] * K[r][b] for r in range(len(Q))), Fraction(0))
          for b in range(d)] for a in range(d)]
    mask = str(model.get("mask"))
    return ExactInstance(V, B, x0, beta, str(model.get("form")), str(model.get("attention")),
                         mask, str(model.get("normalisation")),
                         int(model.get("heads", 1)), model.get("mlp"),
                         _adjacency(model.get("mask_matrix"), mask, len(x0)))


def _adjacency(rows, mask: str, n: int) -> tuple | None:
    """The graph mask's rows, checked: present exactly when ``mask == "adjacency"``, ``n×n``,
    entries 0 or 1, no empty row."""
    if mask != "adjacency":
        if rows is not None:
            raise CheckFailure(f"a mask_matrix is given but the mask is {mask!r}.")
        return None
    if not isinstance(rows, list) or len(rows) != n or \
            not all(isinstance(r, list) and len(r) == n for r in rows) or \
            any(v not in (0, 1) or isinstance(v, float) for r in rows for v in r):
        raise CheckFailure(f"a graph mask needs its mask_matrix: {n}×{n} entries 0 or 1.")
    if any(not any(r) for r in rows):
        raise CheckFailure("a row of the mask_matrix has no 1 (a token attending to nothing).")
    return tuple(tuple(bool(v) for v in r) for r in rows)


def _signed_matrix(S) -> list:
    d = len(S)
    if any(len(row) != d for row in S) or any(v not in (-1, 0, 1) for row in S for v in row):
        raise CheckFailure("a symmetry S must be a square matrix of 0, 1, -1.")
    if sorted(sum(abs(v) for v in row) for row in S) != [1] * d or \
            sorted(sum(abs(S[i][j]) for i in range(d)) for j in range(d)) != [1] * d:
        raise CheckFailure("a symmetry S must be a signed permutation matrix.")
    return [[int(v) for v in row] for row in S]


def _mul(A, B):
    return [[sum((A[i][k] * B[k][j] for k in range(len(B))), Fraction(0))
             for j in range(len(B[0]))] for i in range(len(A))]


def check_symmetries(inst: ExactInstance, elements: list) -> list[tuple[list, list]]:
    """Verify each ``{"S": ..., "tokens": ...}`` exactly (module docstring); returns the
    verified pairs ``(S, π)``. Raises :class:`CheckFailure` when one is not a symmetry."""
    if elements and (inst.heads != 1 or inst.mask != "full" or inst.mlp is not None):
        raise CheckFailure("symmetries are used only with one head, full attention, no MLP.")
    out = []
    for index, element in enumerate(elements):
        try:
            S = _signed_matrix(element["S"])
            pi = [int(v) for v in element["tokens"]]
        except (KeyError, TypeError, ValueError):
            raise CheckFailure(f"symmetry {index} must be {{'S': matrix, 'tokens': list}}.") \
                from None
        if len(S) != inst.d or sorted(pi) != list(range(inst.n)):
            raise CheckFailure(f"symmetry {index} does not act on d={inst.d}, n={inst.n}.")
        St = [list(r) for r in zip(*S, strict=True)]
        if _mul(S, inst.V) != _mul(inst.V, S) or _mul(_mul(St, inst.B), S) != inst.B:
            raise CheckFailure(f"symmetry {index}: S does not commute with V or preserve B.")
        for i in range(inst.n):
            image = [sum((S[a][b] * inst.x0[i][b] for b in range(inst.d)), Fraction(0))
                     for a in range(inst.d)]
            if image != inst.x0[pi[i]]:
                raise CheckFailure(f"symmetry {index}: S x_{i}(0) is not x_{pi[i]}(0).")
        out.append((S, pi))
    return out


def pinned_tokens(inst: ExactInstance, symmetries: list) -> set[int]:
    """Tokens held at the origin forever: those whose fixed space, intersected over the
    verified symmetries that fix them, is ``{0}`` (exact linear algebra over ``Q``)."""
    pinned = set()
    for i in range(inst.n):
        rows = []
        for S, pi in symmetries:
            if pi[i] == i:  # x_i(t) = S x_i(t): (S - I) x_i = 0
                rows.extend([[Fraction(S[a][b] - (1 if a == b else 0)) for b in range(inst.d)]
                             for a in range(inst.d)])
        if rows and _rank(rows) == inst.d:
            pinned.add(i)
    return pinned


def _rank(rows: list) -> int:
    rows = [list(r) for r in rows]
    rank, cols = 0, len(rows[0])
    for c in range(cols):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][c] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for r in range(len(rows)):
            if r != rank and rows[r][c] != 0:
                f = rows[r][c] / rows[rank][c]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[rank], strict=True)]
        rank += 1
    return rank
