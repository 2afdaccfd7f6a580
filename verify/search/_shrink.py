r"""Shrink a failing instance to a minimal one by our own moves (issue 5).

The shrinker knows nothing of claims: it is given an *oracle* ``fails(instance) -> bool`` and
a first instance for which it returns ``True``. It then applies **moves** that make the
instance smaller, keeps a move only when the oracle still says ``True`` (re-verifying at each
step), and restarts from the accepted instance until no move fails any more.

**Size.** :func:`complexity` is the tuple ``(n, d, H, c)``: tokens, dimension, heads and the
*simplicity cost* of the exact entries

.. math:: c = \sum_{p/q}\ \log_2(|p| + 1) + \log_2 q

over ``x0``, every head's ``V, Q, K``, ``beta`` and the MLP's ``W`` and bias (``h`` and the
mask are options and never move). Every accepted move decreases this tuple lexicographically
(a cost move by more than ``1e-9`` bits), so shrinking terminates.

**Moves**, in the order tried (:func:`shrink_candidates`):

1. drop tokens (blocks of ``n/2, n/4, …``, then — for ``4 ≤ n ≤ 8`` — every pair of tokens
   kept alone, then one token; an adjacency mask loses the same
   rows and columns; ``"causal"`` stays causal);
2. drop coordinates (same blocks): row and column of ``V`` and ``W``, column of ``Q, K``
   (``k×d``), entry of the bias; on the sphere the tokens are put back on it exactly;
3. drop a head; drop a row ``r`` of ``Q`` and ``K`` together (one rank-one term of ``QᵀK``);
4. ``V → I``, ``V → diag(V)``, ``V`` rounded; ``(Q, K) → (I, I)``, ``(I, QᵀK)``,
   ``(I, diag(QᵀK))``, rounded; ``beta → 1``, rounded; ``W → I``, rounded; bias ``→ 0``,
   rounded;
5. ``x0`` rounded, then one token rounded.

*Rounded* means every entry replaced by ``Fraction.limit_denominator(D)`` for
``D = 1, 2, 4, 10, 100`` (:data:`DENOMINATORS`); with ``normalisation="sphere"`` it is the
token's stereographic coordinates that are rounded, so that the token stays *exactly* on the
unit sphere. A move that makes the model invalid (:class:`~verify.errors.InvalidArgument`, e.g.
a singular ``I + hV`` or a token at the origin) or does not lower the size is skipped. Every
option (``form``, ``attention``, ``mask``, ``normalisation``, ``h``, the MLP activation) and
the name are kept.

Examples
--------
>>> from verify.model import Instance, Model
>>> inst = Instance(Model(V=[["1/3", 0], [0, 2]]),
...                 [["0.7", "0.2"], ["0.1", "-0.3"], ["0.3", "0.4"]], name="ex")
>>> result = shrink(inst, lambda i: bool((i.x0 > Fraction(1, 2)).any()))
>>> result.instance.x0.tolist(), result.instance.model.V.tolist(), result.stopped
([[Fraction(1, 1)]], [[Fraction(1, 1)]], 'minimal')
>>> result.moves[:3]
['drop token 2', 'drop token 2', 'drop coordinate 2']
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import partial
from itertools import combinations
from numbers import Real

import numpy as np

from verify.errors import InvalidArgument
from verify.model import Instance, Model

__all__ = ["DENOMINATORS", "complexity", "shrink_candidates", "ShrinkResult", "shrink"]

DENOMINATORS = (1, 2, 4, 10, 100)
_MIN_GAIN = 1e-9  # bits: a cost move must lower c by more than this
_SPHERE_DENOMINATOR = 10**6  # re-projection onto the sphere after dropping a coordinate


# -- size ----------------------------------------------------------------------------------
def _entries(instance: Instance) -> Iterator[Fraction]:
    model = instance.model
    yield from instance.x0.flat
    for head in model.heads:
        yield from head.V.flat
        yield from head.Q.flat
        yield from head.K.flat
    yield model.beta
    if model.has_mlp:
        yield from model.mlp.W.flat
        if model.mlp.bias is not None:
            yield from model.mlp.bias.flat


def complexity(instance: Instance) -> tuple[int, int, int, float]:
    r"""The size ``(n, d, H, c)`` that every accepted move lowers lexicographically.

    ``n`` tokens, dimension ``d``, ``H`` heads and the simplicity cost
    ``c = Σ log2(|p| + 1) + log2(q)`` over the exact entries ``p/q`` of ``x0``, of every
    head's ``V, Q, K``, of ``beta`` and of the MLP's ``W`` and bias (a zero costs nothing, an
    integer ``p`` costs ``log2(|p|+1)``). ``c`` is a deterministic ``math.fsum``.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> complexity(Instance(Model(V=[[0]]), [["1/2"]]))    # x0, V, Q, K, beta = 1/2, 0, 1, 1, 1
    (1, 1, 1, 5.0)
    """
    cost = math.fsum(math.log2(abs(f.numerator) + 1) + math.log2(f.denominator)
                     for f in _entries(instance))
    return instance.n, instance.d, len(instance.model.heads), cost


def _smaller(new: tuple, old: tuple) -> bool:
    return new[:3] < old[:3] or (new[:3] == old[:3] and new[3] < old[3] - _MIN_GAIN)


# -- the exact parts of an instance ---------------------------------------------------------
@dataclass(frozen=True)
class _Parts:
    x0: np.ndarray
    heads: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    beta: Fraction
    mask: object
    W: np.ndarray | None
    bias: np.ndarray | None


def _parts(instance: Instance) -> _Parts:
    model = instance.model
    W, bias = (model.mlp.W, model.mlp.bias) if model.has_mlp else (None, None)
    return _Parts(instance.x0, tuple((h.V, h.Q, h.K) for h in model.heads), model.beta,
                  model.mask, W, bias)


def _build(parts: _Parts, instance: Instance) -> Instance:
    old = instance.model
    options = dict(beta=parts.beta, form=old.form, attention=old.attention, mask=parts.mask,
                   normalisation=old.normalisation, h=old.h)
    if parts.W is not None:
        options["mlp"] = {"W": parts.W, "activation": old.mlp.activation, "bias": parts.bias}
    if len(parts.heads) == 1:
        V, Q, K = parts.heads[0]
        model = Model(V, Q, K, **options)
    else:
        model = Model(heads=[{"V": V, "Q": Q, "K": K} for V, Q, K in parts.heads], **options)
    return Instance(model, parts.x0, name=instance.name)


# -- exact helpers --------------------------------------------------------------------------
def _map(array: np.ndarray, fn: Callable) -> np.ndarray:
    out = np.empty(array.shape, dtype=object)
    for index in np.ndindex(array.shape):
        out[index] = fn(array[index])
    return out


def _eye(d: int) -> np.ndarray:
    return _diagonal([Fraction(1)] * d)


def _diagonal(entries) -> np.ndarray:
    """The exact diagonal matrix with these entries (plain ``Fraction`` zeros elsewhere)."""
    out = _map(np.zeros((len(entries), len(entries)), dtype=object), lambda _: Fraction(0))
    for i, value in enumerate(entries):
        out[i, i] = Fraction(value)
    return out


def _round(array: np.ndarray, D: int) -> np.ndarray:
    return _map(array, lambda f: f.limit_denominator(D))


def _rational_sqrt(q: Fraction) -> Fraction | None:
    a, b = math.isqrt(q.numerator), math.isqrt(q.denominator)
    return Fraction(a, b) if a * a == q.numerator and b * b == q.denominator else None


def _to_sphere(row: np.ndarray, D: int | None) -> np.ndarray:
    """A rational point exactly on the unit sphere near ``row/|row|``.

    With ``D=None``: ``row/|row|`` itself when ``|row|`` is rational, else the stereographic
    coordinates (from the pole opposite the largest coordinate) rounded to denominators
    ``≤ 10^6``; with ``D``: those coordinates rounded to denominators ``≤ D``. The inverse map
    ``u ↦ (2u, 1 − |u|²)/(1 + |u|²)`` gives a rational point of norm exactly 1.
    """
    squared = sum((f * f for f in row), Fraction(0))
    if squared == 0:
        raise InvalidArgument("a token is 0 after the move; it has no point on the sphere.")
    root = _rational_sqrt(squared)
    if D is None and root is not None:
        return _map(row, lambda f: f / root)
    y = np.array([float(f) for f in row]) / math.sqrt(float(squared))
    j = int(np.argmax(np.abs(y)))
    sign = 1 if y[j] > 0 else -1
    u = [Fraction(float(y[i] / (1 + abs(y[j])))).limit_denominator(D or _SPHERE_DENOMINATOR)
         for i in range(len(row)) if i != j]
    q = sum((v * v for v in u), Fraction(0))
    point = [2 * v / (1 + q) for v in u]
    point.insert(j, sign * (1 - q) / (1 + q))
    return np.array(point, dtype=object)


def _tokens(parts: _Parts, instance: Instance, rows: np.ndarray, D: int | None) -> np.ndarray:
    """Tokens ``rows`` (of ``parts.x0``) rounded at ``D``, kept on the sphere if need be."""
    x0 = parts.x0.copy()
    for i in rows:
        if instance.model.on_sphere:
            x0[i] = _to_sphere(x0[i], D)
        elif D is not None:
            x0[i] = _round(x0[i], D)
    return x0


# -- moves (each a description and a thunk building the new parts) -------------------------
#: Up to this many tokens, the moves also try every pair of tokens alone.
MAX_PAIR_SEARCH = 8


def _blocks(m: int) -> Iterator[tuple[int, ...]]:
    sizes, size = [], m // 2
    while size >= 2:
        sizes.append(size)
        size //= 2
    seen = set()
    for size in [*sizes, 1]:
        for start in range(0, m, size):
            block = tuple(range(start, min(start + size, m)))
            if len(block) < m and block not in seen:
                seen.add(block)
                yield block


def _named(what: str, block: tuple[int, ...]) -> str:
    """The move's name, with 1-based indices as in the paper."""
    if len(block) == 1:
        return f"drop {what} {block[0] + 1}"
    return f"drop {what}s {block[0] + 1}-{block[-1] + 1}"


def _drop_tokens(parts: _Parts, block: tuple[int, ...]) -> _Parts:
    keep = [i for i in range(parts.x0.shape[0]) if i not in block]
    mask = parts.mask
    if isinstance(mask, np.ndarray):
        mask = mask[np.ix_(keep, keep)]
    return replace(parts, x0=parts.x0[keep], mask=mask)


def _drop_coordinates(parts: _Parts, instance: Instance, block: tuple[int, ...]) -> _Parts:
    keep = [k for k in range(parts.x0.shape[1]) if k not in block]
    square = np.ix_(keep, keep)
    smaller = replace(
        parts, x0=parts.x0[:, keep],
        heads=tuple((V[square], Q[:, keep], K[:, keep]) for V, Q, K in parts.heads),
        W=None if parts.W is None else parts.W[square],
        bias=None if parts.bias is None else parts.bias[keep])
    if instance.model.on_sphere:
        smaller = replace(smaller, x0=_tokens(smaller, instance, range(smaller.x0.shape[0]),
                                              None))
    return smaller


def _set_head(parts: _Parts, index: int, V=None, Q=None, K=None) -> _Parts:
    old = parts.heads[index]
    new = (old[0] if V is None else V, old[1] if Q is None else Q, old[2] if K is None else K)
    return replace(parts, heads=parts.heads[:index] + (new,) + parts.heads[index + 1:])


def _moves(parts: _Parts, instance: Instance) -> Iterator[tuple[str, Callable[[], _Parts]]]:
    n, d = parts.x0.shape
    blocks = list(_blocks(n))
    for block in (b for b in blocks if len(b) > 1):
        yield _named("token", block), partial(_drop_tokens, parts, block)
    if 4 <= n <= MAX_PAIR_SEARCH:  # a pair that fails alone (e.g. an antipodal pair) is often
        for i, j in combinations(range(n), 2):  # not reachable one token at a time
            others = tuple(k for k in range(n) if k not in (i, j))
            yield f"keep only tokens {i + 1}, {j + 1}", partial(_drop_tokens, parts, others)
    for block in (b for b in blocks if len(b) == 1):
        yield _named("token", block), partial(_drop_tokens, parts, block)
    for block in _blocks(d):
        yield _named("coordinate", block), partial(_drop_coordinates, parts, instance, block)
    several = len(parts.heads) > 1
    for j in range(len(parts.heads)) if several else ():
        yield f"drop head {j + 1}", partial(replace, parts,
                                            heads=parts.heads[:j] + parts.heads[j + 1:])
    for j, (_, Q, K) in enumerate(parts.heads):
        label = f"_{j + 1}" if several else ""
        for r in range(Q.shape[0]) if Q.shape[0] > 1 else ():
            rows = [i for i in range(Q.shape[0]) if i != r]
            yield (f"drop row {r + 1} of Q{label} and K{label}",
                   partial(_set_head, parts, j, Q=Q[rows], K=K[rows]))
    for j, (V, Q, K) in enumerate(parts.heads):
        label = f"_{j + 1}" if several else ""
        eye = _eye(d)
        yield f"V{label} -> I", partial(_set_head, parts, j, V=eye)
        yield f"V{label} -> diag(V{label})", partial(_set_head, parts, j,
                                                     V=_diagonal(np.diag(V)))
        for D in DENOMINATORS:
            yield f"round V{label} (denominators <= {D})", partial(_set_head, parts, j,
                                                                   V=_round(V, D))
        B = instance.model.heads[j].B
        yield f"Q{label}, K{label} -> I, I", partial(_set_head, parts, j, Q=eye, K=eye)
        yield (f"Q{label}, K{label} -> I, Q{label}ᵀK{label}",
               partial(_set_head, parts, j, Q=eye, K=B))
        yield (f"Q{label}, K{label} -> I, diag(Q{label}ᵀK{label})",
               partial(_set_head, parts, j, Q=eye, K=_diagonal(np.diag(B))))
        for D in DENOMINATORS:
            yield (f"round Q{label}, K{label} (denominators <= {D})",
                   partial(_set_head, parts, j, Q=_round(Q, D), K=_round(K, D)))
    yield "beta -> 1", partial(replace, parts, beta=Fraction(1))
    for D in DENOMINATORS:
        yield f"round beta (denominator <= {D})", partial(replace, parts,
                                                          beta=parts.beta.limit_denominator(D))
    if parts.W is not None:
        yield "mlp.W -> I", partial(replace, parts, W=_eye(d))
        for D in DENOMINATORS:
            yield f"round mlp.W (denominators <= {D})", partial(replace, parts,
                                                                W=_round(parts.W, D))
    if parts.bias is not None:
        yield "mlp.bias -> 0", partial(replace, parts, bias=_map(parts.bias, lambda f: 0 * f))
        for D in DENOMINATORS:
            yield f"round mlp.bias (denominators <= {D})", partial(replace, parts,
                                                                   bias=_round(parts.bias, D))
    for D in DENOMINATORS:
        yield (f"round x0 (denominators <= {D})",
               lambda D=D: replace(parts, x0=_tokens(parts, instance, range(n), D)))
    for i in range(n) if n > 1 else ():
        for D in DENOMINATORS:
            yield (f"round token {i + 1} (denominators <= {D})",
                   lambda i=i, D=D: replace(parts, x0=_tokens(parts, instance, [i], D)))


def shrink_candidates(instance: Instance) -> Iterator[tuple[str, Instance]]:
    """The valid one-move simplifications of ``instance``, in the order they are tried.

    Parameters
    ----------
    instance : Instance

    Yields
    ------
    (description, candidate) : (str, Instance)
        A move (see the module docstring for the list and its order) and the instance it
        gives. Only candidates that are valid models and whose :func:`complexity` is
        lexicographically smaller are yielded; options and the name are kept.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> inst = Instance(Model(V=[[2]], mask="causal"), [["1/3"], [1]])
    >>> [(text, c.n, c.x0.tolist()) for text, c in shrink_candidates(inst)][:3]
    [('drop token 1', 1, [[Fraction(1, 1)]]), ('drop token 2', 1, [[Fraction(1, 3)]]), \
('V -> I', 2, [[Fraction(1, 3)], [Fraction(1, 1)]])]
    """
    base = complexity(instance)
    parts = _parts(instance)
    for description, make in _moves(parts, instance):
        try:
            candidate = _build(make(), instance)
        except InvalidArgument:
            continue
        if _smaller(complexity(candidate), base):
            yield description, candidate


@dataclass(frozen=True)
class ShrinkResult:
    """What :func:`shrink` did.

    Attributes
    ----------
    instance : Instance
        The smallest failing instance found (``chain[-1]``).
    moves : list of str
        The accepted moves, in order.
    evaluations : int
        Calls of the oracle.
    rejected : int
        Candidates for which the oracle said "does not fail" (or raised).
    chain : list of Instance
        The accepted instances, the original first; :func:`complexity` decreases along it.
    stopped : str
        ``"minimal"`` (no move fails any more) or ``"budget"`` (deadline or evaluations).
    errors : int
        Oracle calls that raised an exception (counted as "does not fail", within
        ``rejected``).
    """

    instance: Instance
    moves: list[str]
    evaluations: int
    rejected: int
    chain: list[Instance]
    stopped: str
    errors: int = 0
    refused: int = 0


def shrink(instance: Instance, fails: Callable[[Instance], bool], *,
           deadline: float | None = None, max_evaluations: int = 200,
           outside: Callable[[Instance], str | None] | None = None) -> ShrinkResult:
    """Greedily shrink a failing instance: take the first candidate that still fails, repeat.

    From ``current = instance``, the candidates of :func:`shrink_candidates` are judged by
    ``fails`` in order; the first with ``fails(candidate) is True`` becomes ``current`` and
    the search restarts from it. It stops when no candidate fails (``"minimal"``: minimal with
    respect to the moves, not a global minimum) or before an oracle call when
    ``time.monotonic() >= deadline`` or ``max_evaluations`` calls were made (``"budget"``).
    An exception raised by ``fails`` counts as "does not fail". A candidate for which
    ``outside`` gives a reason (it left the conjecture's search space, e.g.
    :meth:`~verify.search.SearchSpace.contains`) is refused without calling ``fails``.

    Parameters
    ----------
    instance : Instance
        An instance for which ``fails`` is ``True`` (not re-checked: that costs a call).
    fails : callable
        The oracle, ``Instance -> bool``.
    deadline : float, optional
        A ``time.monotonic()`` value after which no further call is made.
    max_evaluations : int, default 200
        Most oracle calls.
    outside : callable, optional
        ``Instance -> str | None``: why a candidate is not an instance of the claim (refused,
        counted in ``refused``), or ``None``.

    Returns
    -------
    ShrinkResult

    Raises
    ------
    InvalidArgument
        If ``fails`` is not callable, ``max_evaluations`` not a non-negative integer or
        ``deadline`` not a number.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> inst = Instance(Model(V=[[1]]), [[k] for k in range(8)])
    >>> result = shrink(inst, lambda i: i.n >= 3)
    >>> result.instance.n, result.moves[:2], result.stopped
    (3, ['drop tokens 1-4', 'drop token 1'], 'minimal')
    >>> shrink(inst, lambda i: i.n >= 3, max_evaluations=1).stopped
    'budget'
    >>> kept = shrink(inst, lambda i: i.n >= 3, outside=lambda i: "n < 5" if i.n < 5 else None)
    >>> kept.instance.n, kept.refused > 0
    (5, True)
    """
    if not callable(fails):
        raise InvalidArgument(f"fails={fails!r} ({type(fails).__name__}) is not callable; "
                              "give a function Instance -> bool.")
    if isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int) \
            or max_evaluations < 0:
        raise InvalidArgument(f"max_evaluations={max_evaluations!r} "
                              f"({type(max_evaluations).__name__}) must be an integer >= 0.")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, Real)):
        raise InvalidArgument(f"deadline={deadline!r} ({type(deadline).__name__}) must be a "
                              "time.monotonic() value or None.")
    chain, moves = [instance], []
    evaluations = rejected = errors = refused = 0

    def result(stopped: str) -> ShrinkResult:
        return ShrinkResult(chain[-1], moves, evaluations, rejected, chain, stopped, errors,
                            refused)

    while True:
        for description, candidate in shrink_candidates(chain[-1]):
            if evaluations >= max_evaluations or (deadline is not None
                                                  and time.monotonic() >= deadline):
                return result("budget")
            if outside is not None and outside(candidate) is not None:
                refused += 1
                continue
            evaluations += 1
            try:
                failed = bool(fails(candidate))
            except Exception:  # noqa: BLE001 - a crashing oracle does not show a failure
                failed = False
                errors += 1
            if failed:
                chain.append(candidate)
                moves.append(description)
                break
            rejected += 1
        else:
            return result("minimal")
