r"""Named hypotheses of claims: a registry ``name -> predicate(instance)``.

A predicate takes a :class:`~verify.model.Instance` and returns ``(holds, explanation)`` (the
built-ins return a :class:`PredicateResult`; any 2-tuple is accepted): ``holds`` is ``True``,
``False`` or ``None`` (undecided: certified enclosures could not separate the cases), and
``explanation`` is one sentence with the numbers that decide it.  The spectral predicates call
:mod:`verify.exact` and are decided exactly or in certified ball arithmetic; they read the
bilinear form $B = \beta Q^\top K$ (so a negative ``beta`` counts).  A predicate about one
``(Q, K, V)`` is ``False`` on a several-head model.

An instance is *in scope* of a claim when all its hypotheses hold (:func:`check_hypotheses`);
``False`` for one of them makes the instance *out of scope*, ``None`` makes it inconclusive.

Extend the registry with :func:`register_hypothesis`.

Examples
--------
>>> from verify.model import Model, Instance
>>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1]])
>>> HYPOTHESES["is_identity"](inst)
PredicateResult(holds=True, explanation='V = I_2 exactly.')
>>> from verify.vocabulary.hypothesis_expressions import check_hypotheses
>>> check_hypotheses(["is_identity", "d == 1"], inst).holds
False
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

import numpy as np

import verify.exact as exact
from verify.errors import InvalidArgument
from verify.exact.escape import above_escape_threshold, escape_threshold_value
from verify.exact.symmetry import find_symmetries
from verify.flow.fields import VectorField
from verify.model import Instance
from verify.numerics import Arb

__all__ = ["PredicateResult", "ScopeResult", "HYPOTHESES", "register_hypothesis"]


class PredicateResult(NamedTuple):
    """Outcome of one hypothesis on one instance (``holds`` is ``True``, ``False`` or
    ``None`` for undecided)."""

    holds: bool | None
    explanation: str


class ScopeResult(NamedTuple):
    """Outcome of all hypotheses of a claim: the three-valued conjunction, per hypothesis
    ``"name: explanation"``, and per hypothesis its own ``holds``."""

    holds: bool | None
    explanations: tuple[str, ...]
    values: tuple[bool | None, ...] = ()


Predicate = Callable[[Instance], PredicateResult]
HYPOTHESES: dict[str, Predicate] = {}


def register_hypothesis(name: str) -> Callable[[Predicate], Predicate]:
    """Decorator adding a predicate to :data:`HYPOTHESES` under ``name``.

    Raises
    ------
    InvalidArgument
        If ``name`` is empty or already registered to another function.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"name={name!r} must be a non-empty string naming the hypothesis.")

    def decorator(function: Predicate) -> Predicate:
        if HYPOTHESES.get(name, function) is not function:
            raise InvalidArgument(f"hypothesis {name!r} is already registered; pick another name.")
        HYPOTHESES[name] = function
        return function

    return decorator


# -- the built-in predicates ---------------------------------------------------------------
def _single(instance: Instance):
    """The one head of the model, or a ``PredicateResult`` saying why there is none."""
    model = instance.model
    if not model.single_head:
        return None, PredicateResult(False, f"the model has {len(model.heads)} heads; this "
                                     "hypothesis is about a single (Q, K, V).")
    return model.heads[0], None


def _spectral(name: str, uses_form: bool) -> Predicate:
    def predicate(instance: Instance) -> PredicateResult:
        head, failure = _single(instance)
        if failure:
            return failure
        function = getattr(exact, name)
        if uses_form:
            beta_q = instance.model.beta * head.Q
            check = function(beta_q, head.K) if name == "qk_positive_definite" else \
                function(beta_q, head.K, head.V)
        else:
            check = function(head.V)
        return PredicateResult(check.holds, check.explanation)

    predicate.__name__ = name
    predicate.__doc__ = f"``verify.exact.{name}`` on the instance's single head."
    return predicate


for _name, _form in (("is_identity", False), ("is_negative_identity", False),
                     ("qk_positive_definite", True), ("good_triple", True),
                     ("paranormal", False), ("good_triple_with_multiplicity", True),
                     ("complex_leading_pair", False),
                     ("positive_real_part_count", False)):
    register_hypothesis(_name if _name != "positive_real_part_count"
                        else "positive_real_part_count>=1")(_spectral(_name, _form))


@register_hypothesis("qk_identity")
def _qk_identity(instance: Instance) -> PredicateResult:
    """``QᵀK = I_d`` exactly. ``β`` is the model's own field, not folded in: state it apart
    (``"beta == 1"``, ``"0 < beta <= 4"``)."""
    head, failure = _single(instance)
    if failure:
        return failure
    B = head.B
    for (i, j), value in np.ndenumerate(B):
        if value != (1 if i == j else 0):
            return PredicateResult(False, f"(QᵀK)[{i + 1}, {j + 1}] = {_show(value)} ≠ "
                                   f"{int(i == j)}.")
    return PredicateResult(True, f"QᵀK = I_{B.shape[0]} exactly.")


@register_hypothesis("d == 1")
def _d_is_one(instance: Instance) -> PredicateResult:
    """Tokens are scalars."""
    return PredicateResult(instance.d == 1, f"d = {instance.d}.")


@register_hypothesis("d >= 2")
def _d_at_least_two(instance: Instance) -> PredicateResult:
    """Tokens have dimension at least 2."""
    return PredicateResult(instance.d >= 2, f"d = {instance.d}.")


@register_hypothesis("distinct_tokens")
def _distinct(instance: Instance) -> PredicateResult:
    """The initial tokens are pairwise distinct (exact comparison)."""
    seen: dict[tuple, int] = {}
    for index, row in enumerate(instance.x0):
        key = tuple(row)
        if key in seen:
            return PredicateResult(False, f"tokens {seen[key] + 1} and {index + 1} are equal.")
        seen[key] = index
    return PredicateResult(True, f"the {instance.n} initial tokens are pairwise distinct.")


@register_hypothesis("no_antipodal_pair")
def _no_antipodal_pair(instance: Instance) -> PredicateResult:
    """No two initial tokens point in exactly opposite directions (``x_j = -c x_i`` with
    ``c > 0``; on the sphere: an antipodal pair, an exact invariant set of the symmetric
    dynamics). Decided exactly: all 2×2 minors of ``(x_i, x_j)`` vanish and
    ``<x_i, x_j> < 0``. A statement about the data, the same for every mask and
    normalisation."""
    rows = [list(map(Fraction, row)) for row in instance.x0]
    for i, a in enumerate(rows):
        for j in range(i + 1, len(rows)):
            b = rows[j]
            parallel = all(a[p] * b[q] == a[q] * b[p] for p in range(len(a))
                           for q in range(p + 1, len(a)))
            if parallel and sum(u * v for u, v in zip(a, b, strict=True)) < 0:
                return PredicateResult(False, f"tokens {i + 1} and {j + 1} point in exactly "
                                       "opposite directions.")
    return PredicateResult(True, "no two initial tokens point in opposite directions.")


@register_hypothesis("in_open_hemisphere")
def _in_open_hemisphere(instance: Instance) -> PredicateResult:
    """All initial tokens lie in one open half-space through the origin (on the sphere: an
    open hemisphere): some ``w`` has ``<w, x_i> > 0`` for every ``i``. Equivalently the origin
    is not in the convex hull of the tokens. Decided exactly with a certificate either way: a
    rational ``w`` checked in exact arithmetic, or convex weights ``λ`` with ``Σ λ_i x_i = 0``
    solved exactly on the support a linear program finds; ``None`` if neither verifies."""
    import sympy
    from scipy.optimize import linprog

    X = [[Fraction(v) for v in row] for row in instance.x0]
    n, d = len(X), len(X[0])
    A = np.array([[float(v) for v in row] for row in X])
    found = linprog(np.zeros(d), A_ub=-A, b_ub=-np.ones(n), bounds=[(None, None)] * d)
    if found.status == 0:
        w = [Fraction(v).limit_denominator(10**12) for v in found.x]
        if all(sum(a * b for a, b in zip(row, w, strict=True)) > 0 for row in X):
            return PredicateResult(True, "a rational w has <w, x_i> > 0 for every token.")
    hull = linprog(np.zeros(n), A_eq=np.vstack([A.T, np.ones(n)]),
                   b_eq=np.r_[np.zeros(d), 1.0], bounds=[(0, None)] * n)
    if hull.status == 0:
        support = [i for i in range(n) if hull.x[i] > 1e-12]
        M = sympy.Matrix([[X[i][a] for i in support] for a in range(d)]
                         + [[1] * len(support)])
        try:  # exact rationals; free parameters (if any) set to 0
            solution, free = M.gauss_jordan_solve(sympy.Matrix([0] * d + [1]))
            weights = list(solution.subs({p: 0 for p in free}))
        except ValueError:  # the support found in floating point is not exact
            weights = None
        if weights is not None and all(v >= 0 for v in weights):
            return PredicateResult(False, "the origin is a convex combination of tokens "
                                   f"{[i + 1 for i in support]} (exact weights): no open "
                                   "hemisphere holds them all.")
    return PredicateResult(None, "neither a separating w nor exact convex weights verified.")


@register_hypothesis("not_at_equilibrium")
def _not_at_equilibrium(instance: Instance) -> PredicateResult:
    """The initial tokens are not an equilibrium of the dynamics as stated (its own form,
    mask, normalisation, heads and MLP): the field at ``t = 0`` is certified nonzero in ball
    arithmetic (256 bits). Exactly zero balls decide ``False``; balls that all contain 0
    without being exactly 0 leave it undecided (an equilibrium up to 10^-70 cannot be told
    from one). Not for discrete layers."""

    model = instance.model
    if model.discrete:
        return PredicateResult(None, "discrete layers have no vector field at a point.")
    backend = Arb(bits=256)
    field = VectorField(model, instance.n, backend)
    with backend.working_precision():
        F = field(0, backend.from_exact(instance.x0))
        entries = [F[i, j] for i in range(F.nrows()) for j in range(F.ncols())]
        nonzero = [k for k, v in enumerate(entries) if not v.contains(0)]
        if nonzero:
            i, j = divmod(nonzero[0], F.ncols())
            value = float(entries[nonzero[0]].mid())
            return PredicateResult(True, f"the field at x(0) is certified nonzero (token "
                                   f"{i + 1}, coordinate {j + 1}: {value:.5g}).")
        if all(v.is_exact() and v == 0 for v in entries):
            return PredicateResult(False, "the field at x(0) is exactly 0: an equilibrium.")
    return PredicateResult(None, "every entry of the field at x(0) is within its ball of 0: "
                           "x(0) may be an equilibrium.")


@register_hypothesis("scalar_positive")
def _scalar_positive(instance: Instance) -> PredicateResult:
    """Theorem 2.1: ``d = 1``, ``V > 0`` and ``β Q K > 0``."""
    head, failure = _single(instance)
    if failure:
        return failure
    if instance.d != 1:
        return PredicateResult(False, f"d = {instance.d}, not 1.")
    v, b = head.V[0, 0], instance.model.beta * head.B[0, 0]
    text = f"V = {_show(v)} and βQK = {_show(b)}"
    if v > 0 and b > 0:
        return PredicateResult(True, f"{text} are positive.")
    return PredicateResult(False, f"{text}; both must be positive.")


@register_hypothesis("plain_model")
def _plain_model(instance: Instance) -> PredicateResult:
    """The paper's model (1.1) or its rescaled form (3.1): one softmax head, full attention,
    no normalisation, no MLP."""
    bad = instance.model.departures()
    if bad:
        return PredicateResult(False, "not the model (1.1): " + ", ".join(bad) + ".")
    return PredicateResult(True, "the model (1.1): one softmax head, full attention, no "
                           "normalisation, no MLP.")


@register_hypothesis("no_exact_symmetry")
def _no_exact_symmetry(instance: Instance) -> PredicateResult:
    """Generic data: no signed permutation other than the identity commutes with ``V``,
    preserves ``βQᵀK`` and permutes the initial tokens — by a token permutation that also
    preserves the attention mask (causal, or a graph) — decided exactly, as the integrator's
    invariant-subspace search (one head, no MLP, ``d ≤ 6``)."""

    model = instance.model
    if not model.single_head or model.has_mlp or instance.d > 6:
        return PredicateResult(None, "symmetries are searched for one head, no MLP and d ≤ 6 "
                               "only.")
    group = find_symmetries(model.V, model.B, instance.x0, max_dim=6)
    mask = model.mask_for(instance.n)
    if mask is None:
        if group.is_trivial:
            return PredicateResult(True, "no exact signed-permutation symmetry.")
        return PredicateResult(False, f"the data have an exact symmetry ({group.describe()}).")
    return _masked_symmetry(group, mask)


#: At most this many re-matchings of equal tokens are tried per symmetry under a mask.
MAX_REMATCHINGS = 40_320


def _masked_symmetry(group, mask: np.ndarray) -> PredicateResult:
    r"""Under a mask a pair :math:`(S, \pi)` is a symmetry of the dynamics only when
    :math:`\pi` preserves the mask (``mask[π(i), π(j)] = mask[i, j]``); with equal tokens
    every matching of them is tried (``π`` composed with permutations of equal tokens)."""
    import itertools
    import math

    n = mask.shape[0]
    classes = [list(c) for c in group.duplicate_classes]
    if math.prod(math.factorial(len(c)) for c in classes) > MAX_REMATCHINGS:
        return PredicateResult(None, "too many equal tokens to try every matching under the "
                               "mask.")
    identity = tuple(range(n))
    candidates = [(None, identity), *((g, g.tokens) for g in group.elements)]
    for g, tokens in candidates:
        for orders in itertools.product(*(itertools.permutations(c) for c in classes)):
            tau = list(identity)
            for cls, order in zip(classes, orders, strict=True):
                for a, b in zip(cls, order, strict=True):
                    tau[a] = b
            pi = [tau[t] for t in tokens]
            if g is None and pi == list(identity):
                continue
            if all(mask[pi[i], pi[j]] == mask[i, j] for i in range(n) for j in range(n)):
                what = g.describe().split(" with ")[0] if g is not None else "identity"
                return PredicateResult(False, f"the data have an exact symmetry that preserves "
                                       f"the mask ({what} with tokens "
                                       f"{[p + 1 for p in pi]}).")
    return PredicateResult(True, "no exact signed-permutation symmetry preserves the mask.")


def _show(value: Fraction) -> str:
    return str(value) if value.denominator < 10**6 else f"{float(value):.6g}"


@register_hypothesis("above_escape_threshold")
def _above_threshold(instance) -> PredicateResult:
    """``d = 1`` and ``max x_i(0) > a`` or ``min x_i(0) < −a`` with ``a² = n² e^{−a²}``."""
    if instance.d != 1:
        return PredicateResult(False, f"d = {instance.d}, not 1.")
    x, n = [row[0] for row in instance.x0], instance.n
    a = escape_threshold_value(n, 12)
    up, down = above_escape_threshold(max(x), n), above_escape_threshold(-min(x), n)
    if up or down:
        return PredicateResult(True, f"max x = {float(max(x)):.6g}, min x = {float(min(x)):.6g}"
                               f": an extreme token lies beyond a = {a}.")
    if up is None or down is None:
        return PredicateResult(None, f"an extreme token is too close to a = {a} to decide.")
    return PredicateResult(False, f"all tokens lie in [-a, a], a = {a}.")


def _mlp_kind(instance) -> tuple[str | None, bool]:
    """The MLP's activation (None without one) and whether ``W = I`` with no bias, exactly."""
    if not instance.model.has_mlp:
        return None, False
    mlp = instance.model.mlp
    W = mlp.W
    identity = all(W[a, b] == (1 if a == b else 0) for a in range(W.shape[0])
                   for b in range(W.shape[1]))
    return mlp.activation, identity and mlp.bias is None


@register_hypothesis("mlp_relu_identity")
def _mlp_relu_identity(instance) -> PredicateResult:
    """An MLP ``W σ(·)`` with ``σ = ReLU``, ``W = I`` and no bias (§12: three hyperplanes)."""
    activation, identity = _mlp_kind(instance)
    if activation == "relu" and identity:
        return PredicateResult(True, "MLP: ReLU with W = I, no bias.")
    return PredicateResult(False, f"MLP: {activation or 'none'}"
                           f"{' with W = I' if identity else ''}, not ReLU with W = I.")


@register_hypothesis("mlp_collapse_regime")
def _mlp_collapse_regime(instance) -> PredicateResult:
    """An MLP for which §12 reports a collapse: tanh with ``W = I``, or ReLU with ``W ≠ I``
    (no bias)."""
    activation, identity = _mlp_kind(instance)
    model = instance.model
    if model.has_mlp and model.mlp.bias is None and (
            (activation == "tanh" and identity) or (activation == "relu" and not identity)):
        return PredicateResult(True, f"MLP: {activation} with W {'=' if identity else '≠'} I.")
    return PredicateResult(False, f"MLP: {activation or 'none'}: §12 reports no collapse for "
                           "it.")
