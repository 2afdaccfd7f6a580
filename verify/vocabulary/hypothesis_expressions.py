r"""Hypotheses written as expressions: ``"d == 2"``, ``"n >= 3 and 0 < beta <= 4"``,
``"is_identity or is_negative_identity"``, ``"not paranormal"``.

A hypothesis that is not a registered name is one expression over

* the sizes and the model, **exactly**: ``n`` (tokens), ``d`` (dimension), ``heads`` (number of
  attention heads), ``beta`` (the model's inverse temperature, a rational);
* the registered predicates whose names are identifiers (``is_identity``, ``qk_identity``,
  ``good_triple``, ``distinct_tokens``, ...), each ``True``, ``False`` or *undecided*;

* the **data** and functions of it (:mod:`verify.vocabulary.data_hypotheses`): ``x0``, ``V``,
  ``Q``, ``K``, ``B``, ``mask``, vector and matrix literals, ``sum(x0) != 0``,
  ``equiangular(x0, 1/3)``, ``convex_position(x0)``, ``V == [[0, -1], [1, 0]]``, ...;

with integer and decimal literals (read exactly: ``0.1`` is ``1/10``), ``+ - * /``, the
comparisons ``< <= > >= == !=`` (chained, as in ``0 < beta <= 4``) and ``and``, ``or``,
``not``. Logic is three-valued (Kleene): an undecided predicate makes the whole undecided unless
the other operands decide it (``False and x`` is ``False``, ``True or x`` is ``True``).
Nothing else is allowed: no attribute access, no dunder names, no call outside the allowed
functions, no other names; the message names the field.

Examples
--------
>>> from verify.model import Instance, Model
>>> inst = Instance(Model(V=[[1, 0], [0, 1]], beta=2), [[1, 0], [0, 1], [1, 1]])
>>> evaluate_hypothesis("d == 2 and n >= 3 and 0 < beta <= 4", inst).holds
True
>>> evaluate_hypothesis("is_identity and not d == 2", inst)
PredicateResult(holds=False, explanation='is_identity = true, d = 2: false.')
>>> check_hypothesis("d = 2", "f.toml", "hypotheses[0]")
Traceback (most recent call last):
    ...
verify.errors.InvalidArgument: f.toml: hypotheses[0]: 'd = 2' is neither a registered ...
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterable
from fractions import Fraction

from verify.errors import InvalidArgument
from verify.exact.plain import fail, suggest
from verify.exact.reals import from_sympy, symbolic
from verify.model import Instance
from verify.vocabulary.data_hypotheses import (
    DATA_FUNCTIONS,
    DATA_NAMES,
    NotApplicable,
    arithmetic,
    check_data_node,
    compare,
    data_type,
    data_value,
    reads_data,
)
from verify.vocabulary.hypotheses import HYPOTHESES, PredicateResult, ScopeResult

__all__ = ["check_hypothesis", "evaluate_hypothesis", "size_bounds", "beta_excluded", "QUANTITIES",
           "about_data", "pinned", "check_hypotheses"]

#: The numbers an expression may name, read exactly off the instance.
QUANTITIES = {"n": lambda inst: inst.n, "d": lambda inst: inst.d,
              "heads": lambda inst: len(inst.model.heads),
              "beta": lambda inst: Fraction(inst.model.beta)}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv}


def _predicates() -> dict:
    return {name: f for name, f in HYPOTHESES.items() if name.isidentifier()}


def _type(node: ast.AST) -> str:
    """``"number"`` or ``"truth"`` (or, for the data, ``"vector"``, ``"matrix"``:
    :mod:`verify.vocabulary.data_hypotheses`); ``ValueError`` where the expression mixes them."""
    kind = data_type(node, _type)
    if kind is not None:
        return kind

    def need(child, kind: str, what: str) -> None:
        if _type(child) != kind:
            wanted = "numbers" if kind == "number" else "predicates or comparisons"
            raise ValueError(f"{what} needs {wanted}, not {ast.unparse(child)!r}")

    if isinstance(node, ast.Constant):
        return "number"
    if isinstance(node, ast.Name):
        return "number" if node.id in QUANTITIES else "truth"
    if isinstance(node, ast.UnaryOp):
        kind = "truth" if isinstance(node.op, ast.Not) else "number"
        need(node.operand, kind, "not" if kind == "truth" else "a sign")
        return kind
    if isinstance(node, ast.BinOp):
        need(node.left, "number", "arithmetic")
        need(node.right, "number", "arithmetic")
        return "number"
    if isinstance(node, ast.Compare):
        for child in (node.left, *node.comparators):
            need(child, "number", "a comparison")
        return "truth"
    for child in node.values:  # BoolOp
        need(child, "truth", "and/or")
    return "truth"


#: Characters of one hypothesis expression (a longer one could exhaust Python's recursion).
MAX_EXPRESSION_LENGTH = 1000


def _parse(text: str) -> ast.Expression:
    """The checked syntax tree of ``text``; ``ValueError`` with what is wrong."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"it is {len(text)} characters long, more than "
                         f"{MAX_EXPRESSION_LENGTH}; split it into several hypotheses")
    try:
        return _checked(ast.parse(text.strip(), mode="eval"))
    except SyntaxError as exc:
        raise ValueError(f"it does not parse ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise ValueError("it is nested too deeply to evaluate; split it into several "
                         "hypotheses") from None


def _checked(tree: ast.Expression) -> ast.Expression:
    names = {**QUANTITIES, **_predicates()}
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if check_data_node(node, called):
            continue
        if isinstance(node, ast.Name):
            if node.id not in names:
                known = [*names, *DATA_NAMES, *DATA_FUNCTIONS]
                raise ValueError(f"unknown name {node.id!r}.{suggest(node.id, known)} Names: "
                                 f"{', '.join(QUANTITIES)}, the data "
                                 f"{', '.join(DATA_NAMES)} and the predicates "
                                 f"{', '.join(sorted(_predicates()))}")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ValueError(f"{node.value!r}: only numbers may be written")
        elif not isinstance(node, (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp,
                                   ast.Not, ast.USub, ast.UAdd, ast.Compare, ast.BinOp,
                                   ast.Load, *_COMPARE, *_ARITH)):
            raise ValueError(f"{type(node).__name__} is not allowed (only numbers, n, d, heads, "
                             "beta, predicate names, the data x0, V, Q, K, B, mask, vector "
                             "and matrix literals, + - * / @, the allowed functions, "
                             "comparisons, and/or/not)")
    if _type(tree.body) != "truth":
        raise ValueError("it is a number, not a statement (compare it: e.g. 'd == 2')")
    return tree


def check_hypothesis(text: object, source: str, where: str) -> None:
    """Fail (naming ``where``) unless ``text`` is a registered hypothesis or a valid
    expression (module docstring)."""

    if not isinstance(text, str):
        fail(source, where, f"{text!r} must be a string: a predicate name or an expression.")
    if text in HYPOTHESES:
        return
    try:
        _parse(text)
    except ValueError as exc:
        hint = ""
        if str(exc).startswith("it does not parse"):
            hint = " Write '==' to test equality." if "=" in text and "==" not in text \
                else suggest(text, HYPOTHESES)
        shown = repr(text) if len(text) <= 80 else repr(text[:60] + "…")
        fail(source, where, f"{shown} is neither a registered predicate nor a valid "
             f"expression: {exc}.{hint}")


def _value(node: ast.AST, instance, seen: dict, text: str):
    """Exact numbers, booleans or ``None`` (undecided) — Kleene logic for and/or/not."""
    def value(child):
        return _value(child, instance, seen, text)

    if isinstance(node, ast.Expression):
        return value(node.body)
    data = data_value(node, value, instance, seen)
    if data is not NotImplemented:
        return data
    if isinstance(node, ast.Constant):
        return Fraction(str(node.value))
    if isinstance(node, ast.Name):
        if node.id not in seen:
            if node.id in QUANTITIES:
                seen[node.id] = QUANTITIES[node.id](instance)
            else:
                seen[node.id] = _predicates()[node.id](instance)[0]
        return seen[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = value(node.operand)
        if isinstance(node.op, ast.Not):
            return None if operand is None else not operand
        if operand is None or isinstance(node.op, ast.UAdd):
            return operand
        return arithmetic(ast.Mult(), Fraction(-1), operand)
    if isinstance(node, ast.BinOp):
        left, right = value(node.left), value(node.right)
        try:
            return arithmetic(node.op, left, right)
        except InvalidArgument as exc:
            raise InvalidArgument(f"hypothesis {text!r}: {exc}.") from None
    if isinstance(node, ast.Compare):
        left, results = value(node.left), []
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = value(right_node)
            results.append(compare(op, left, right))
            left = right
        return False if False in results else None if None in results else True
    values = [value(v) for v in node.values]  # BoolOp
    if isinstance(node.op, ast.And):
        return False if False in values else None if None in values else True
    return True if True in values else None if None in values else False


def _show(value) -> str:
    if value is None:
        return "undecided"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def evaluate_hypothesis(text: str, instance):
    """The expression ``text`` on ``instance``, as a
    :class:`~verify.vocabulary.hypotheses.PredicateResult` whose explanation gives the values
    that decided it."""

    seen: dict = {}
    try:
        holds = _value(_parse(text), instance, seen, text)
    except NotApplicable as exc:
        return PredicateResult(False, f"{exc}: false.")
    holds = holds if holds is None else bool(holds)
    values = ", ".join(f"{k} = {_show(v)}" for k, v in seen.items()) or text.strip()
    return PredicateResult(holds, f"{values}: {_show(holds)}.")


def about_data(text: str) -> bool:
    """Whether the hypothesis ``text`` is an expression that reads the data (``x0``, ``V``,
    ``Q``, ``K``, ``B``, ``mask``): undecided, it puts the instance out of scope.

    >>> about_data("sum(x0) != 0"), about_data("d == 2"), about_data("is_identity")
    (True, False, False)
    """
    try:
        return reads_data(_parse(text))
    except ValueError:
        return False


def size_bounds(texts) -> dict[str, tuple[int | None, int | None]]:
    """The bounds on ``n`` and ``d`` that hypotheses state outright (conjuncts such as
    ``d == 2``, ``n >= 3``, ``2 <= d <= 4``; anything under ``or``/``not`` is ignored), as
    ``{"n": (lo, hi), "d": (lo, hi)}`` with ``None`` for no bound. A search draws its sizes
    inside them.

    >>> size_bounds(["d == 2", "n >= 3 and beta > 0", "is_identity"])
    {'n': (3, None), 'd': (2, 2)}
    """
    import math

    bounds = {"n": [1, None], "d": [1, None]}

    def tighten(name: str, op: ast.cmpop, value: Fraction) -> None:
        lo, hi = bounds[name]
        if isinstance(op, ast.Eq | ast.GtE | ast.Gt):
            low = math.ceil(value) if not isinstance(op, ast.Gt) else math.floor(value) + 1
            lo = max(lo, low)
        if isinstance(op, ast.Eq | ast.LtE | ast.Lt):
            high = math.floor(value) if not isinstance(op, ast.Lt) else math.ceil(value) - 1
            hi = high if hi is None else min(hi, high)
        bounds[name] = [lo, hi]

    flipped = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
               ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for child in node.values:
                visit(child)
        elif isinstance(node, ast.Compare):
            chain = [node.left, *node.comparators]
            for op, a, b in zip(node.ops, chain, chain[1:], strict=False):
                if isinstance(a, ast.Name) and a.id in bounds and isinstance(b, ast.Constant):
                    tighten(a.id, op, Fraction(str(b.value)))
                elif isinstance(b, ast.Name) and b.id in bounds and isinstance(a, ast.Constant):
                    tighten(b.id, flipped[type(op)](), Fraction(str(a.value)))

    for text in texts:
        try:
            visit(_parse(text).body)
        except ValueError:  # a registered name that is not an expression says nothing here
            continue
    return {name: (lo, hi) for name, (lo, hi) in bounds.items()}


def _conjuncts(node: ast.AST):
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for child in node.values:
            yield from _conjuncts(child)
    else:
        yield node


def _constant(node: ast.AST, text: str):
    """The value of a node that reads nothing of an instance (a literal), or ``None``."""
    if any(isinstance(n, ast.Name) and n.id not in ("pi", "E") and not any(
            isinstance(c, ast.Call) and c.func is n for c in ast.walk(node))
           for n in ast.walk(node)):
        return None
    try:
        return _value(node, None, {}, text)
    except (InvalidArgument, NotApplicable, AttributeError, TypeError):
        return None


def pinned(texts) -> dict:
    """What the hypotheses fix outright, for a search to draw inside them: conjuncts (not
    under ``or``/``not``) ``V == [[...]]`` and ``mask == [[...]]`` (the matrix, entries as
    exact numbers), ``equiangular(x0, rho)`` (``"rho"``), ``in_open_hemisphere(x0)`` and
    ``unit_rows(x0)`` (``True``).

    >>> pinned(["V == [[0, -1], [1, 0]] and equiangular(x0, 1/2)", "d == 2"])
    {'V': ((Fraction(0, 1), Fraction(-1, 1)), (Fraction(1, 1), Fraction(0, 1))), 'rho': \
Fraction(1, 2)}
    """

    def entry(v):
        return from_sympy(symbolic(v)) if not isinstance(v, Fraction) else v

    out: dict = {}
    for text, node in _all_conjuncts(texts):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0],
                                                                               ast.Eq):
            sides = (node.left, node.comparators[0])
            for name_node, other in (sides, sides[::-1]):
                if isinstance(name_node, ast.Name) and name_node.id in ("V", "mask") \
                        and isinstance(other, ast.List):
                    matrix = _constant(other, text)
                    if matrix is not None and isinstance(matrix[0], tuple):
                        out[name_node.id] = tuple(tuple(entry(v) for v in row)
                                                  for row in matrix)
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id == "x0":
            name = node.func.id
            if name == "equiangular" and len(node.args) == 2:
                rho = _constant(node.args[1], text)
                if rho is not None:
                    out["rho"] = entry(rho)
            elif name in ("in_open_hemisphere", "unit_rows"):
                out[name] = True
    return out


def beta_excluded(texts, beta) -> str | None:
    """The first conjunct about ``beta`` alone (e.g. ``0 < beta <= 4``) that the value
    ``beta`` violates, or ``None``: a search does not draw a beta its hypotheses exclude.

    >>> beta_excluded(["d == 2 and 0 < beta <= 4"], Fraction(5))
    '0 < beta <= 4'
    >>> beta_excluded(["0 < beta <= 4"], 4) is None
    True
    """
    for text, node in _all_conjuncts(texts):
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if names == {"beta"} and _value(node, None, {"beta": Fraction(beta)}, text) is False:
            return ast.unparse(node)
    return None


def _all_conjuncts(texts):
    """``(text, conjunct)`` for the conjuncts of every hypothesis that is an expression."""
    for text in texts:
        try:
            tree = _parse(text)
        except ValueError:
            continue
        for node in _conjuncts(tree.body):
            yield text, node


def check_hypotheses(names: Iterable[str], instance: Instance) -> ScopeResult:
    """Evaluate every hypothesis on ``instance`` (``False`` wins over ``None``): a name in
    :data:`HYPOTHESES`, or an expression such as ``"d == 2 and 0 < beta <= 4"``
    (:mod:`verify.vocabulary.hypothesis_expressions`).

    Raises
    ------
    InvalidArgument
        For a name that is neither registered nor a valid expression.
    """

    values, lines = [], []
    for name in names:
        if name in HYPOTHESES:
            holds, explanation = HYPOTHESES[name](instance)  # plain 2-tuples are accepted
        else:
            try:
                holds, explanation = evaluate_hypothesis(name, instance)
            except ValueError:
                raise InvalidArgument(f"hypothesis={name!r} is neither registered nor an "
                                      f"expression.{suggest(name, HYPOTHESES)} Known: "
                                      f"{', '.join(sorted(HYPOTHESES))}.") from None
        values.append(holds)
        lines.append(f"{name}: {explanation}")
    holds = False if False in values else None if None in values else True
    return ScopeResult(holds, tuple(lines), tuple(values))
