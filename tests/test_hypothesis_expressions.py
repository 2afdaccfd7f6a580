"""Hypotheses as expressions over the instance (issue: a conjecture language): exact sizes and
beta, three-valued logic over the registered predicates, and a parser that accepts nothing but
its small grammar (fuzzed)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.claim import HYPOTHESES, PredicateResult, check_hypotheses, parse_claim
from verify.errors import InvalidArgument
from verify.model import Instance, Model
from verify.vocabulary.hypothesis_expressions import check_hypothesis, evaluate_hypothesis


def instance(n=3, d=2, beta=1, V=None):
    V = V if V is not None else [[int(i == j) for j in range(d)] for i in range(d)]
    return Instance(Model(V=V, beta=beta), [[k + 1] + [0] * (d - 1) for k in range(n)])


@pytest.fixture
def undecided(monkeypatch):
    """A predicate that cannot tell, registered for one test only."""
    monkeypatch.setitem(HYPOTHESES, "undecided_for_tests",
                        lambda inst: PredicateResult(None, "cannot tell"))


@pytest.mark.parametrize("text, n, d, beta, holds", [
    ("d == 2", 3, 2, 1, True), ("d == 2", 3, 3, 1, False), ("d >= 3", 3, 3, 1, True),
    ("n >= 3 and 0 < beta <= 4", 3, 2, 4, True),         # beta = 4 exactly: the bound holds
    ("n >= 3 and 0 < beta <= 4", 3, 2, "4.000001", False),
    ("0 < beta <= 4", 2, 2, 0, False), ("beta == 0.1", 2, 2, "1/10", True),  # 0.1 is 1/10
    ("d + 1 == n", 3, 2, 1, True), ("2 * d < n or is_identity", 5, 2, 1, True),
    ("not is_identity", 2, 2, 1, False), ("heads == 1", 2, 2, 1, True),
])
def test_expressions_are_exact(text, n, d, beta, holds):
    assert evaluate_hypothesis(text, instance(n, d, Fraction(beta))).holds is holds


def test_logic_is_three_valued(undecided):
    inst = instance()
    assert evaluate_hypothesis("undecided_for_tests", inst).holds is None
    assert evaluate_hypothesis("undecided_for_tests and d == 3", inst).holds is False
    assert evaluate_hypothesis("undecided_for_tests or d == 2", inst).holds is True
    assert evaluate_hypothesis("not undecided_for_tests and d == 2", inst).holds is None
    result = check_hypotheses(["is_identity", "undecided_for_tests or d == 3"], inst)
    assert result.holds is None and "undecided" in result.explanations[1]


def test_a_claim_states_its_hypotheses_as_expressions():
    claim = parse_claim({"id": "c", "label": "L", "kind": "conjecture", "expected": "open",
                         "statement": "s", "hypotheses": ["d == 2", "n >= 3 and beta > 0"],
                         "conclusion": {"type": "consensus"},
                         "families": [{"name": "f", "kind": "explicit", "V": [[1, 0], [0, 1]],
                                       "x0": [[1, 0], [0, 1]], "horizon": 1}]}, "c.toml")
    scope = check_hypotheses(claim.hypotheses, claim.families[0].instance(0))
    assert scope.values == (True, False) and "n = 2" in scope.explanations[1]


@pytest.mark.parametrize("text, words", [
    ("d = 2", "Write '=='"), ("is_identiy", "Did you mean 'is_identity'?"),
    ("__import__('os')", "dunder name '__import__' is not allowed"),
    ("beta.real > 0", "attribute access ('.real') is not allowed"),
    ("exec('1') == 1", "the call exec(...) is not allowed (outside the allowed functions"),
    ("is_identity + 1 > 0", "arithmetic needs numbers"), ("n + 1", "is a number"),
    ("d == True", "only numbers"), ("[d][0] == 1", "Subscript is not allowed"),
    ("(lambda: 1)() == 1", "not allowed"),
])
def test_malformed_expressions_name_the_field(text, words):
    with pytest.raises(InvalidArgument, match="hypotheses\\[0\\]") as exc:
        check_hypothesis(text, "c.toml", "hypotheses[0]")
    assert words in str(exc.value)


_PIECES = st.sampled_from(["n", "d", "beta", "heads", "is_identity", "paranormal", "and", "or",
                           "not", "==", "<", "<=", "+", "-", "*", "/", "(", ")", "0", "1",
                           "2.5", ".", "__class__", "import", "lambda", "x", "[", "]", ",",
                           "'a'", "os", "=", ":", "if", "else", "**", "%", "@", "getattr"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=9).map(" ".join))
def test_the_parser_accepts_only_its_grammar(text):
    """Every string is a clean usage error or a statement that evaluates to True, False or
    undecided on an instance (or a clean error for a division by zero); never another
    exception, never an attribute, call or import."""
    try:
        check_hypothesis(text, "c.toml", "hypotheses[0]")
    except InvalidArgument:
        return
    assert not any(word in text for word in ("__", "import", "lambda", "getattr"))
    try:
        result = evaluate_hypothesis(text, instance())
    except InvalidArgument as exc:  # the value, not the syntax: a clean error saying why
        assert any(why in str(exc) for why in ("division by zero", "shape", "exponent",
                                                "no inner product")), exc
        return
    assert result.holds in (True, False, None)
