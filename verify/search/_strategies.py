r"""Hypothesis strategies over a :class:`~verify.search.SearchSpace`, and the search loop.

The division of labour the issue asks for: Hypothesis draws the small structured choices — the
token distribution, the classes of ``V`` and ``QᵀK``, ``d``, ``n``, ``beta``, a NumPy seed, and
the entries of the integer classes (``integer``, ``integer-diagonal``) — and the arrays are
drawn from ``numpy.random.default_rng(seed)`` by the generators of :mod:`verify.claim`.  A
:class:`Draw` is therefore small, printable and replayable: :func:`build_family` turns it into a
one-instance :class:`~verify.claim.Family` (whose ``to_json`` is a claim-file family table) and
:func:`build_instance` into the :class:`~verify.model.Instance`.

``d`` and ``n`` are drawn *after* the classes, among the values the classes allow (their
``requires`` hooks): ``cross-polytope`` forces ``n = 2d``, ``hypercube`` ``n = 2^d``,
``regular-polygon`` ``d = 2``, always within the ranges of the space.

:func:`search` drives Hypothesis's engine (generate phase only, no database, a fixed seed) and
stops at the first draw the oracle confirms as a counterexample, after ``max_examples`` draws,
or at a :func:`time.monotonic` deadline.  The same seed gives the same draws; the oracle may
judge several at once (``verify check`` on a process pool or a Dask cluster) and report in
draw order, which gives the same outcome as judging them one by one.

Examples
--------
>>> from verify.search import parse_search
>>> space = parse_search({"n": [3, 4], "d": 2, "V": "identity", "QK": "integer",
...                       "tokens": "cross-polytope"}, "<doc>")
>>> stats = search(space, lambda draw: draw.K_matrix[0][0] == 2, seed=0, max_examples=200)
>>> stats.stopped, stats.draw.n, stats.draw.K_matrix[0][0]
('found', 4, 2)
>>> inst = build_instance(space, stats.draw, "cex")
>>> inst.name, inst.x0.shape, inst.model.heads[0].K[0, 0]
('cex', (4, 2), Fraction(2, 1))
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st

from verify.claim._family import Family, GeneratorSpec
from verify.claim._generators import QK_GENERATORS, TOKEN_DISTRIBUTIONS, V_GENERATORS
from verify.errors import InvalidArgument
from verify.exact.plain import to_plain
from verify.model import Instance
from verify.search._beta import BetaRange
from verify.search._space import (
    HYPOTHESIS_QK_CLASSES,
    HYPOTHESIS_V_CLASSES,
    REGISTRIES,
    SearchSpace,
    feasible,
    spec_label,
)

__all__ = ["Draw", "SearchStats", "draw_strategy", "build_family", "build_instance", "search"]

IntMatrix = tuple  # tuple of tuples of int
AXES = ("n", "d", "V", "QK", "beta", "tokens", "model")


@dataclass(frozen=True)
class Draw:
    """One point of a search space: what Hypothesis chose.

    Attributes
    ----------
    n, d : int
    V, QK, tokens : GeneratorSpec
        The classes (``V.name`` may be ``integer``/``integer-diagonal``, ``QK.name``
        ``integer``: then the matrix is in ``V_matrix`` / ``K_matrix``, with ``Q = I``).
    beta : Fraction
    seed : int
        Seed of ``numpy.random.default_rng`` for every array drawn by a generator.
    V_matrix, K_matrix : tuple of tuples of int or None
        The integer matrices drawn by Hypothesis.
    model : int
        Index of the model variant (:attr:`SearchSpace.models`).
    beta_range : str
        The distribution ``beta`` was drawn from (its description), or ``""`` for a listed
        value.
    """

    n: int
    d: int
    V: GeneratorSpec
    QK: GeneratorSpec
    beta: Fraction
    tokens: GeneratorSpec
    seed: int
    V_matrix: IntMatrix | None = None
    K_matrix: IntMatrix | None = None
    model: int = 0
    beta_range: str = ""

    def labels(self) -> dict:
        """The value of each axis, as counted in :attr:`SearchStats.covered`."""
        return {"n": self.n, "d": self.d, "V": spec_label(self.V, V_GENERATORS),
                "QK": spec_label(self.QK, QK_GENERATORS),
                "beta": self.beta_range or str(self.beta),
                "tokens": spec_label(self.tokens, TOKEN_DISTRIBUTIONS),
                "model": f"variant {self.model + 1}"}

    def describe(self) -> str:
        """One line, e.g. ``'n=4, d=2, V=identity, QK=integer K=[[2, 0], [0, 0]], …'``."""
        labels = self.labels()
        if self.V_matrix is not None:
            labels["V"] += f" V={_rows(self.V_matrix)}"
        if self.K_matrix is not None:
            labels["QK"] += f" K={_rows(self.K_matrix)}"
        if self.beta_range:
            labels["beta"] = f"{self.beta} (from {self.beta_range})"
        return ", ".join(f"{k}={v}" for k, v in labels.items()) + f", seed={self.seed}"

    def to_json(self) -> dict:
        """A plain dict (exact numbers as ints or ``"p/q"`` strings)."""
        out = {"n": self.n, "d": self.d, "V": _spec(self.V, "generator"),
               "QK": _spec(self.QK, "generator"), "beta": to_plain(self.beta),
               "tokens": _spec(self.tokens, "distribution"), "seed": self.seed,
               "model": self.model}
        if self.V_matrix is not None:
            out["V_matrix"] = [list(row) for row in self.V_matrix]
        if self.K_matrix is not None:
            out["K_matrix"] = [list(row) for row in self.K_matrix]
        if self.beta_range:
            out["beta_range"] = self.beta_range
        return out


def _rows(matrix: IntMatrix) -> str:
    return "[" + ", ".join("[" + ", ".join(str(v) for v in row) + "]" for row in matrix) + "]"


def _spec(spec: GeneratorSpec, key: str) -> dict:
    return {key: spec.name, **to_plain(spec.params)}


@dataclass(frozen=True)
class SearchStats:
    """What :func:`search` did.

    Attributes
    ----------
    drawn : int
        Draws passed to the oracle.
    stopped : {"found", "budget", "examples"}
        A counterexample was confirmed; the deadline passed; ``max_examples`` draws were made
        (or Hypothesis exhausted a small space).
    draw : Draw or None
        The draw the oracle confirmed (``stopped == "found"``).
    covered : dict
        ``axis -> {value: count}`` for the axes ``n, d, V, QK, beta, tokens``.
    seconds : float
    """

    drawn: int
    stopped: str
    draw: Draw | None
    covered: dict = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"drawn": self.drawn, "stopped": self.stopped,
                "draw": None if self.draw is None else self.draw.to_json(),
                "covered": {axis: {str(k): v for k, v in counts.items()}
                            for axis, counts in self.covered.items()},
                "seconds": self.seconds}


def _combinations(space: SearchSpace) -> dict:
    """``(t, v, q) -> [(d, n), …]``: the shapes each triple of class indices allows."""
    shapes = [(d, n) for d in range(space.d[0], space.d[1] + 1)
              for n in range(space.n[0], space.n[1] + 1)]
    ok = {key: [[not feasible(REGISTRIES[key], spec, n, d) for d, n in shapes]
                for spec in getattr(space, key)] for key in ("V", "QK", "tokens")}
    table = {}
    for t, tok in enumerate(ok["tokens"]):
        for v, vv in enumerate(ok["V"]):
            for q, qq in enumerate(ok["QK"]):
                fits = [s for s, a, b, c in zip(shapes, tok, vv, qq, strict=True) if a and b and c]
                if fits:
                    table[t, v, q] = fits
    return table


def draw_strategy(space: SearchSpace) -> st.SearchStrategy:
    """A Hypothesis strategy of :class:`Draw` over ``space``.

    Order: token distribution, ``V`` class, ``QK`` class (each among those that fit some
    shape together with the earlier ones), ``d``, ``n`` (among the shapes all three allow),
    ``beta``, the NumPy seed (only when something is random: otherwise 0, so that a finite
    deterministic space is exhausted rather than repeated), then the integer entries of the
    Hypothesis-drawn classes.
    """
    table = _combinations(space)
    if not table:
        raise InvalidArgument("the search space has no (n, d) that suits a V class, a QK class "
                              "and a token distribution at once; widen n or d.")

    random_mlp = any((m.get("mlp") or {}).get("W") == "random" for m in space.models)

    @st.composite
    def draws(draw):
        t = draw(st.sampled_from(sorted({key[0] for key in table})))
        v = draw(st.sampled_from(sorted({key[1] for key in table if key[0] == t})))
        q = draw(st.sampled_from(sorted({key[2] for key in table if key[:2] == (t, v)})))
        shapes = table[t, v, q]
        d = draw(st.sampled_from(sorted({s[0] for s in shapes})))
        n = draw(st.sampled_from([s[1] for s in shapes if s[0] == d]))
        choice = draw(st.sampled_from(space.beta))
        beta, beta_range = choice, ""
        if isinstance(choice, BetaRange):  # Hypothesis picks the point: shrinks to the centre
            beta = choice.draw(draw(st.integers(0, 2**32 - 1)))
            beta_range = choice.describe()
        model = draw(st.integers(0, len(space.models) - 1)) if space.variants else 0
        V, QK = space.V[v], space.QK[q]
        seed = draw(st.integers(0, 2**32 - 1)) if random_mlp or any(
            _random(REGISTRIES[key], spec) for key, spec in
            (("V", V), ("QK", QK), ("tokens", space.tokens[t]))) else 0
        V_matrix = K_matrix = None
        if V.name in HYPOTHESIS_V_CLASSES:
            entry = st.integers(-V.params["bound"], V.params["bound"])
            if V.name == "integer-diagonal":
                diagonal = draw(st.lists(entry, min_size=d, max_size=d))
                V_matrix = tuple(tuple(diagonal[i] if i == j else 0 for j in range(d))
                                 for i in range(d))
            else:
                V_matrix = _square(draw(st.lists(entry, min_size=d * d, max_size=d * d)), d)
        if QK.name in HYPOTHESIS_QK_CLASSES:
            entry = st.integers(-QK.params["bound"], QK.params["bound"])
            K_matrix = _square(draw(st.lists(entry, min_size=d * d, max_size=d * d)), d)
        return Draw(n, d, V, QK, beta, space.tokens[t], seed, V_matrix, K_matrix, model,
                    beta_range)

    return draws()


def _random(registry: dict, spec: GeneratorSpec) -> bool:
    return spec.name in registry and registry[spec.name].draws(spec.params)


def _square(entries: list, d: int) -> IntMatrix:
    return tuple(tuple(entries[i * d:(i + 1) * d]) for i in range(d))


def build_family(space: SearchSpace, draw: Draw, name: str = "search") -> Family:
    """The one-instance family of ``draw`` (kind ``explicit`` when nothing is random).

    Raises
    ------
    InvalidArgument
        If a class of the draw does not fit its ``(n, d)``, or an integer class lacks its
        matrix.
    """
    for key, spec in (("V", draw.V), ("QK", draw.QK), ("tokens", draw.tokens)):
        problem = feasible(REGISTRIES[key], spec, draw.n, draw.d)
        if problem:
            raise InvalidArgument(f"draw {key}={spec.name!r} with n={draw.n}, d={draw.d}: it "
                                  f"{problem}; draw from draw_strategy(space).")
    exact = {"V": draw.V.name in HYPOTHESIS_V_CLASSES, "QK": draw.QK.name in HYPOTHESIS_QK_CLASSES}
    for key, matrix in (("V", draw.V_matrix), ("QK", draw.K_matrix)):
        if exact[key] and (matrix is None or len(matrix) != draw.d):
            raise InvalidArgument(f"draw {key}={getattr(draw, key).name!r} needs its "
                                  f"{draw.d}×{draw.d} integer matrix (got {matrix!r}).")
    V = tuple(tuple(Fraction(x) for x in row) for row in draw.V_matrix) if exact["V"] else draw.V
    K = tuple(tuple(Fraction(x) for x in row) for row in draw.K_matrix) if exact["QK"] else None
    QK = None if exact["QK"] else draw.QK
    model = dict(space.models[draw.model], beta=draw.beta)
    random = any(isinstance(s, GeneratorSpec) and _random(registry, s) for s, registry in (
        (V, V_GENERATORS), (QK, QK_GENERATORS), (draw.tokens, TOKEN_DISTRIBUTIONS))) or \
        (model.get("mlp") or {}).get("W") == "random"
    return Family(name, "random" if random else "explicit", 1, draw.seed if random else None,
                  draw.d, draw.n, V, None, K, QK, draw.tokens, space.heads, model,
                  space.horizon, space.checkpoints, space.precision, draw.describe())


def build_instance(space: SearchSpace, draw: Draw, name: str) -> Instance:
    """The instance of ``draw``, named ``name`` (see :func:`build_family`).

    Raises
    ------
    InvalidArgument
        If a generator cannot apply (a shape it does not allow, a rejection step that kept
        failing, a model option the drawn weights violate).
    """
    instance = build_family(space, draw).instance(0)
    instance.name = name
    return instance


class _Stop(BaseException):
    """Ends Hypothesis's run at once (a BaseException, so Hypothesis neither catches it nor
    replays the example)."""

    def __init__(self, reason: str, draw: Draw | None = None, error: Exception | None = None):
        super().__init__(reason)
        self.reason, self.draw, self.error = reason, draw, error


class _Sequential:
    """The evaluator of a plain ``evaluate(draw) -> bool``: each outcome known at once."""

    def __init__(self, evaluate: Callable[[Draw], bool]) -> None:
        self.evaluate = evaluate

    def submit(self, draw: Draw) -> list[tuple[Draw, bool]]:
        return [(draw, self.evaluate(draw))]

    def drain(self, wait: bool = True) -> list[tuple[Draw, bool]]:
        return []


def search(space: SearchSpace, evaluate, *, seed: int, max_examples: int | None = None,
           deadline: float | None = None) -> SearchStats:
    """Feed draws of ``space`` to ``evaluate`` until it reports a counterexample or a budget
    ends.

    The draws are generated here, in one sequence fixed by ``seed``; ``evaluate`` may judge
    them one at a time or several at once (in parallel), as long as it reports the outcomes
    in draw order: the search then stops at the first counterexample *in draw order* and its
    statistics count the draws up to it, whatever ran ahead.

    Parameters
    ----------
    space : SearchSpace
    evaluate : callable or evaluator
        ``evaluate(draw) -> bool`` (``True``: a counterexample was confirmed, stop); or an
        object with ``submit(draw)`` and ``drain(wait)``, each returning the ``(draw, found)``
        pairs decided since, in draw order (``drain(True)`` waits for all, ``drain(False)``
        takes those already decided: the deadline has passed), and ``cancel()``, called when
        the search stops with draws in flight. An exception either raises propagates unchanged
        (after Hypothesis has been left).
    seed : int
        Hypothesis's seed: the same seed gives the same sequence of draws.
    max_examples : int, optional
        Maximum number of draws (default: 100 without a deadline, unbounded with one).
    deadline : float, optional
        A :func:`time.monotonic` time; no draw is made after it (of the draws in flight, those
        already decided in draw order are taken, the others dropped).

    Returns
    -------
    SearchStats

    Raises
    ------
    InvalidArgument
        For a ``max_examples`` that is not a positive integer or a bad ``seed``.
    """
    if max_examples is not None and (not isinstance(max_examples, int) or
                                     isinstance(max_examples, bool) or max_examples < 1):
        raise InvalidArgument(f"max_examples={max_examples!r} must be a positive integer.")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InvalidArgument(f"seed={seed!r} ({type(seed).__name__}) must be an integer.")
    limit = max_examples if max_examples is not None else 100 if deadline is None else 10**9
    evaluator = evaluate if hasattr(evaluate, "submit") else _Sequential(evaluate)
    covered = {axis: Counter() for axis in AXES}
    count = [0]
    start = time.monotonic()

    def take(outcomes: list) -> None:
        for draw, found in outcomes:
            count[0] += 1
            for axis, value in draw.labels().items():
                covered[axis][value] += 1
            if found:
                raise _Stop("found", draw)

    def decided(step: Callable[[], list], draw: Draw | None = None) -> list:
        try:
            return list(step())
        except Exception as exc:  # leave Hypothesis before re-raising (no replay, no report)
            raise _Stop("error", draw, exc) from None

    @hypothesis.seed(seed)
    @settings(database=None, deadline=None, max_examples=limit, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(draw_strategy(space))
    def run(draw: Draw) -> None:
        if deadline is not None and time.monotonic() >= deadline:
            raise _Stop("budget")
        take(decided(lambda: evaluator.submit(draw), draw))

    stopped, final = "examples", None
    try:
        try:
            run()
        except _Stop as stop:
            if stop.reason != "budget":
                raise
            stopped = "budget"
        take(decided(lambda: evaluator.drain(stopped != "budget")))
    except _Stop as stop:
        if stop.error is not None:
            raise stop.error from None
        stopped, final = stop.reason, stop.draw
    finally:
        if hasattr(evaluator, "cancel"):
            evaluator.cancel()
    return SearchStats(count[0], stopped, final, {a: dict(c) for a, c in covered.items()},
                       time.monotonic() - start)
