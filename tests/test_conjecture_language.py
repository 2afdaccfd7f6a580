"""The conjecture language of issue 23: exact expressions, data hypotheses, beta ranges, pinned
V and masks, existential constants, Θ, identities, strict rates, until, threshold formulas.

Every refused form must name its field; the parsers must refuse code; the shrinker must never
leave a hypothesis on the data.
"""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy

from verify.claim import TOKEN_DISTRIBUTIONS, check_hypotheses, judge_scope
from verify.claim._family_file import parse_family
from verify.errors import InvalidArgument
from verify.exact.inputs import to_rational
from verify.exact.plain import to_plain
from verify.exact.real_geometry import convex_position, in_closed_hemisphere, in_hull
from verify.exact.reals import Irrational, exact_number, parse_real, sign, symbolic
from verify.model import Instance, Model
from verify.predict._expressions import check_expression, evaluate
from verify.run import check_conjecture, load_conjecture, parse_conjecture
from verify.run._runner import InlineExecutor
from verify.search import parse_search, search
from verify.search._beta import BetaRange
from verify.vocabulary.hypothesis_expressions import check_hypothesis, evaluate_hypothesis, pinned

CONJECTURES = Path(__file__).parent.parent / "claims" / "conjectures"

CODE = ["__import__('os')", "x.real", "().__class__", "sqrt.__name__", "eval('1')",
        "open('f')", "(lambda: 1)()", "[c for c in 'ab']", "getattr(1, 'real')",
        "sqrt(2).__class__"]


# ----------------------------------------------------------------- exact expressions
@pytest.mark.parametrize("text", CODE)
def test_the_number_parser_refuses_code(text):
    with pytest.raises(ValueError) as exc:
        parse_real(text)
    message = str(exc.value)
    assert any(words in message for words in ("attribute access", "dunder name", "not allowed",
                                              "unknown name")), message


def test_the_number_parser_names_what_it_refuses():
    with pytest.raises(ValueError, match=r"attribute access \('\.real'\)"):
        parse_real("x.real")
    with pytest.raises(ValueError, match="dunder name '__class__'"):
        parse_real("__class__")
    with pytest.raises(ValueError, match=r"the call eval\(\.\.\.\) is not allowed"):
        parse_real("eval('1')")
    with pytest.raises(ValueError, match="exponent 1000"):
        parse_real("2**1000")
    with pytest.raises(ValueError, match="not a finite real number"):
        parse_real("sqrt(-1)")


def test_exact_numbers_are_rational_when_they_can_be_and_keep_their_expression_otherwise():
    assert exact_number("cos(pi/3)") == Fraction(1, 2)
    assert type(exact_number("cos(pi/3)")) is Fraction
    x = exact_number("sqrt(2)/2")
    assert isinstance(x, Irrational) and str(x) == "sqrt(2)/2"
    assert abs(Fraction(x) - Fraction(1, 2) * Fraction(1414213562373095, 10**15)) < 1e-15
    # the rounding is a function of the value: equal values round alike, -x to minus x
    assert exact_number("sin(pi/4)") == x and exact_number("-sqrt(2)/2") == -x
    assert sign(symbolic(x) ** 2 - sympy.Rational(1, 2)) == 0
    # 256 significant bits: the rounding is within 2^-256 relative of the value
    assert abs(float(sympy.N(symbolic(x) - sympy.Rational(x.numerator, x.denominator), 90))) \
        < 2.0 ** -256
    # arithmetic gives plain rationals (the rounding), pickling and copying keep it
    assert type(x + 1) is Fraction and type(-x) is Fraction
    assert pickle.loads(pickle.dumps(x)).expression == x.expression
    assert copy.deepcopy(x) is x and to_plain([x]) == ["sqrt(2)/2"]


def test_entries_of_families_and_instances_take_expressions(tmp_path):
    assert to_rational("cos(2*pi/5)")[1] == "expression-rounded"
    with pytest.raises(InvalidArgument, match=r"x0\[1, 0\]='cos\(x\)'.*unknown name 'x'"):
        Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], ["cos(x)", 0]])
    with pytest.raises(InvalidArgument, match=r"families\[0\]\.x0.*attribute access"):
        parse_family({"name": "f", "kind": "explicit", "V": "identity",
                      "x0": [[1, 0], ["x.real", 0]], "horizon": 1}, 0, "c.toml")
    fam = parse_family({"name": "f", "kind": "explicit", "V": "identity", "normalise": True,
                        "x0": [[1, 1], [3, 4]], "horizon": 1}, 0, "c.toml")
    assert fam.tokens[1] == (Fraction(3, 5), Fraction(4, 5))
    assert str(fam.tokens[0][0]) == "sqrt(2)/2"
    again = parse_family(fam.to_json(), 0, "<json>")  # the expressions survive the round trip
    assert [str(v) for row in again.tokens for v in row] == \
        [str(v) for row in fam.tokens for v in row]
    for bad, words in (({"normalise": "yes"}, "families[0].normalise: 'yes' must be true"),
                       ({"x0": [[0, 0], [1, 0]], "normalise": True},
                        "families[0].normalise: row 1 is 0")):
        table = {"name": "f", "kind": "explicit", "V": "identity", "x0": [[1, 1], [3, 4]],
                 "horizon": 1, **bad}
        with pytest.raises(InvalidArgument) as exc:
            parse_family(table, 0, "c.toml")
        assert words in str(exc.value)
    with pytest.raises(InvalidArgument, match=r"families\[0\]\.normalise: normalises explicit"):
        parse_family({"name": "f", "kind": "explicit", "V": "identity", "normalise": True,
                      "tokens": "cross-polytope", "n": 4, "d": 2, "horizon": 1}, 0, "c.toml")


def test_radians_and_equiangular_tokens_are_exact():
    circle = TOKEN_DISTRIBUTIONS["circle-angles"].draw(
        None, 2, 2, {"angles": None, "radians": [Fraction(0), exact_number("pi/3")]})
    assert circle[1].tolist() == [Fraction(1, 2), exact_number("sqrt(3)/2")]
    with pytest.raises(InvalidArgument, match=r"families\[0\]\.tokens: 'circle-angles' takes "
                                              "angles"):
        parse_family({"name": "f", "kind": "explicit", "V": "identity", "n": 2, "d": 2,
                      "tokens": {"distribution": "circle-angles", "angles": [0, "1/2"],
                                 "radians": [0, 1]}, "horizon": 1}, 0, "c.toml")
    rng = np.random.default_rng(3)
    X = TOKEN_DISTRIBUTIONS["equiangular"].draw(rng, 3, 4, {"rho": Fraction(1, 4),
                                                            "rotate": True})
    inst = Instance(Model(V=np.eye(4, dtype=int), form="x", normalisation="sphere"), X)
    assert evaluate_hypothesis("equiangular(x0, 1/4) and unit_rows(x0)", inst).holds is True
    assert evaluate_hypothesis("equiangular(x0, 1/5)", inst).holds is False
    with pytest.raises(InvalidArgument, match=r"families\[0\]\.tokens: 'equiangular' needs "
                                              r"-1/\(n - 1\) <= rho < 1"):
        parse_family({"name": "f", "kind": "explicit", "V": "identity", "n": 3, "d": 3,
                      "tokens": {"distribution": "equiangular", "rho": 1}, "horizon": 1}, 0,
                     "c.toml")


# ----------------------------------------------------------------- data hypotheses
def _instance(x0, V=((1, 0), (0, 1)), **options):
    return Instance(Model(V=[list(r) for r in V], **options), x0, name="f#0")


@pytest.mark.parametrize("text", [*CODE, "x0.T == 0", "x0[0] == 1", "V.__class__ == 1",
                                  "exec('1') == 1", "sum(**x0) == 0"])
def test_the_hypothesis_parser_refuses_code(text):
    with pytest.raises(InvalidArgument, match=r"c\.toml: hypotheses\[0\]"):
        check_hypothesis(text, "c.toml", "hypotheses[0]")


def test_data_hypotheses_are_decided_exactly_with_three_values():
    square = _instance([[1, 0], [0, 1], [-1, 0], [0, -1]], V=((0, -1), (1, 0)))
    assert evaluate_hypothesis("sum(x0) == 0 and V == [[0, -1], [1, 0]]", square).holds
    assert evaluate_hypothesis("convex_position(x0)", square).holds is True
    assert evaluate_hypothesis("in_closed_hemisphere(x0)", square).holds is False
    assert evaluate_hypothesis("in_open_hemisphere(x0)", square).holds is False
    pentagon = _instance([[f"cos(2*pi*{k}/5)", f"sin(2*pi*{k}/5)"] for k in range(5)])
    assert evaluate_hypothesis("unit_rows(x0) and convex_position(x0)", pentagon).holds
    assert evaluate_hypothesis("inner(row(x0, 1), row(x0, 2)) == cos(2*pi/5)", pentagon).holds
    assert evaluate_hypothesis("sum(x0) == 0", pentagon).holds is True  # SymPy proves it
    # a token the hypothesis names but the instance lacks: the hypothesis does not hold
    assert evaluate_hypothesis("inner(row(x0, 1), row(x0, 3)) == -1", square).holds is True
    few = _instance([[1, 0], [0, 1]])
    missing = evaluate_hypothesis("inner(row(x0, 1), row(x0, 3)) != -1", few)
    assert missing.holds is False and "row 3 does not exist" in missing.explanation
    inside = _instance([[0, 0], [1, 0], [0, 1], ["1/3", "1/3"]])
    assert convex_position([list(r) for r in inside.x0])[0] is False
    assert in_hull([Fraction(1, 3), Fraction(1, 3)], [[0, 0], [1, 0], [0, 1]])[0] is True
    assert in_closed_hemisphere([[1, 0], [-1, 0], [0, 1]])[0] is True


def test_an_undecided_data_hypothesis_puts_the_instance_out_of_scope_with_the_reason(
        monkeypatch):
    import verify.vocabulary.data_hypotheses as data_hypotheses

    inst = _instance([["sqrt(2)", 0], [-1, 0]])
    assert evaluate_hypothesis("exp(pi*sqrt(163)) != 262537412640768744", inst).holds
    assert judge_scope(["sum(x0) != 0", "d == 2"], inst, family="f") is None
    # the same comparison when the balls cannot decide it (an exact sign is unknown)
    monkeypatch.setattr(data_hypotheses, "sign",
                        lambda value: None if not isinstance(value, Fraction) else
                        (value > 0) - (value < 0))
    assert check_hypotheses(["sum(x0) != 0"], inst).holds is None
    result = judge_scope(["sum(x0) != 0", "d == 2"], inst, family="f")
    assert result.verdict.value == "out-of-scope"
    assert "undecided" in result.reason and "sum(x0) != 0" in result.reason
    # an undecided named predicate keeps its old rule: inconclusive
    monkeypatch.setitem(__import__("verify.claim", fromlist=["HYPOTHESES"]).HYPOTHESES,
                        "test_undecided", lambda instance: (None, "balls overlap."))
    assert judge_scope(["test_undecided"], inst, family="f").verdict.value == "inconclusive"


def test_no_exact_symmetry_is_decided_under_causal_and_graph_masks():
    line = _instance([[1, 0], [2, 0], [3, 0]], form="x", mask="causal")
    scope = check_hypotheses(["no_exact_symmetry"], line)
    assert scope.holds is False and "preserves the mask" in scope.explanations[0]
    mirror = _instance([[1, "1/10"], [1, "-1/10"]], form="x", mask="causal")
    assert check_hypotheses(["no_exact_symmetry"], mirror).holds is True  # swap breaks causality
    ring = _instance([[1, "1/10"], [1, "-1/10"]], form="x", mask=[[1, 1], [1, 1]])
    assert check_hypotheses(["no_exact_symmetry"], ring).holds is False


def test_hypotheses_pin_what_the_search_draws():
    ring = [[1 if (j - i) % 5 in (0, 1, 4) else 0 for j in range(5)] for i in range(5)]
    space = parse_search({"model": {"form": "x"}}, "c.toml",
                         hypotheses=["V == [[0, -1], [1, 0]]", f"mask == {ring}"])
    assert space.d == (2, 2) and space.n == (5, 5)
    assert space.V[0].name == "matrix" and space.model["mask"] == tuple(map(tuple, ring))
    assert pinned(["equiangular(x0, 1/3)"]) == {"rho": Fraction(1, 3)}
    space = parse_search({"d": [3, 4]}, "c.toml", hypotheses=["equiangular(x0, 1/3)"])
    assert {t.name for t in space.tokens} == {"equiangular"}


# ----------------------------------------------------------------- beta ranges
def test_beta_from_an_unbounded_range():
    space = parse_search({"n": [2, 3], "d": 2, "V": "identity", "tokens": "sphere",
                          "beta": [{"distribution": "log-uniform", "low": 0, "high": "inf"}]},
                         "c.toml")
    drawn = []
    search(space, lambda draw: drawn.append(draw.beta) or False, seed=0, max_examples=30)
    assert all(b > 0 for b in drawn) and max(drawn) > 10 and min(drawn) < Fraction(1, 10)
    r = BetaRange("log-uniform", None, Fraction(0))
    assert r.value(0.5) == -1 and r.contains(Fraction(-3)) and not r.contains(Fraction(3))
    for bad, field, words in (
            ({"distribution": "log-uniform", "low": -1, "high": "inf"}, "search.beta[0]",
             "cannot cross 0"),
            ({"distribution": "uniform", "low": 0, "high": "inf"}, "search.beta[0].high",
             "finite ends"),
            ({"distribution": "lognormal", "low": 0, "high": 1}, "search.beta[0].distribution",
             "must be one of"),
            ({"distribution": "log-uniform", "low": 2, "high": 1}, "search.beta[0]", "empty"),
            ({"distribution": "log-uniform", "low": 0}, "search.beta[0].high", "missing")):
        with pytest.raises(InvalidArgument) as exc:
            parse_search({"beta": [bad]}, "c.toml")
        assert f"c.toml: {field}: " in str(exc.value) and words in str(exc.value)


# ----------------------------------------------------------------- formulas
@pytest.mark.parametrize("text", [*CODE, "x0.T", "x0.tofile('/tmp/x')", "norm.__globals__",
                                  "max(**x0)", "x0(1)"])
def test_the_formula_parser_refuses_code(text):
    with pytest.raises(InvalidArgument, match=r"c\.toml: conclusion\.to: "):
        check_expression(text, "initial", "c.toml", "conclusion.to")
    with pytest.raises(InvalidArgument):
        evaluate(text, {"x0": np.eye(2)})


def test_formulas_are_walked_not_evaluated():
    names = {"x0": np.array([[0.0, 1.0], [2.0, 3.0]]), "n": 2, "d": 2}
    assert evaluate("mean(x0, axis=0)", names).tolist() == [1.0, 2.0]
    assert evaluate("x0[1, :] @ x0[0] if 1 else 0", names).tolist() == 3.0
    assert evaluate("10**10**10", names) == np.inf  # no huge Python integer
    assert evaluate("hull([[0, 0], [2, 0], [0, 2], [0.5, 0.5]])", names).shape == (3, 2)


CONCLUSION_ERRORS = [
    ({"type": "exists", "quantity": "diameter", "bound": "C * exp(-lam * t)",
      "constants": {"C": "(0, inf)", "lam": "(0; inf)"}}, "conclusion.constants.lam",
     "must be an interval"),
    ({"type": "exists", "quantity": "diameter", "bound": "C * exp(-mu * t)",
      "constants": {"C": "(0, inf)"}}, "conclusion.bound", "unknown name 'mu'"),
    ({"type": "exists", "quantity": "diameter", "bound": "C.real",
      "constants": {"C": "(0, inf)"}}, "conclusion.bound", "attribute access"),
    ({"type": "exists", "quantity": "diameter", "bound": "t", "constants": {"x0": "(0, 1)"}},
     "conclusion.constants.x0", "cannot name a constant"),
    ({"type": "exists", "quantity": "diameter", "bound": "C", "constants": {"C": "[2, 1]"}},
     "conclusion.constants.C", "is empty"),
    ({"type": "theta", "quantity": "diameter", "of": "t**-2", "tail": 2}, "conclusion.tail",
     "fraction in (0, 1]"),
    ({"type": "theta", "quantity": "diameter", "of": "__import__('os')"}, "conclusion.of",
     "dunder name"),
    ({"type": "identity", "quantity": "diameter", "value": "0", "from_time": 2, "until": 1},
     "conclusion.until", "before from_time"),
    ({"type": "inequality", "quantity": "diameter", "relation": "<=", "value": "1",
      "until": -1}, "conclusion.until", "must be ≥ 0"),
    ({"type": "events", "threshold": "diam(x0)", "merge_order": [[1, 2], [1, 2, 3]]},
     "conclusion.threshold", "unknown name 'diam'"),
    ({"type": "rate", "law": "exponential", "value": 0, "relation": "=>"},
     "conclusion.relation", "must be one of"),
]


@pytest.mark.parametrize("table, field, words", CONCLUSION_ERRORS,
                         ids=[f"{t['type']}-{f}" for t, f, _ in CONCLUSION_ERRORS])
def test_each_refused_conclusion_names_its_field(table, field, words):
    with pytest.raises(InvalidArgument) as exc:
        parse_conjecture({"id": "c", "statement": "s", "conclusion": table,
                          "families": [{"name": "f", "kind": "explicit", "V": "identity",
                                        "x0": [[1, 0], [0, 1], [1, 1]], "horizon": 1}]},
                         "c.toml")
    assert f"c.toml: {field}: " in str(exc.value) and words in str(exc.value), str(exc.value)


# ----------------------------------------------------------------- the judges
def _verdict(path: Path, tmp_path, **changes) -> str:
    import tomllib
    from decimal import Decimal

    data = tomllib.loads(path.read_text("utf-8"), parse_float=Decimal)
    data["conclusion"].update(changes)
    run = check_conjecture(parse_conjecture(data, str(path)), out_dir=tmp_path,
                           instances=1, seed=0, executor=InlineExecutor())
    return run.claim_results[0].verdict.value, run


def test_theta_and_exists_do_not_hold_for_the_wrong_law(tmp_path):
    verdict, run = _verdict(CONJECTURES / "theta-consensus-rate.toml", tmp_path / "a",
                            of="exp(-t/2)")
    assert verdict == "inconclusive"
    (record,) = run.records.values()
    assert "drifts" in record["result"]["reason"]
    verdict, run = _verdict(CONJECTURES / "theta-consensus-rate.toml", tmp_path / "c")
    (record,) = run.records.values()
    assert verdict == "supported" and record["result"]["basis"] == "fit"
    verdict, run = _verdict(CONJECTURES / "exists-exponential-consensus.toml", tmp_path / "b",
                            constants={"C": "(0, inf)", "lam": "(3/2, inf)"})
    assert verdict == "inconclusive"
    (record,) = run.records.values()
    assert "the fit does not resolve" in record["result"]["reason"]


def test_an_identity_is_violated_beyond_its_error():
    from verify.claim import CheckRequest
    from verify.judge import judge_request

    data = load_conjecture(CONJECTURES / "exact-pentagon-half-circle.toml")
    claim = parse_conjecture({"id": "c", "statement": "s", "conclusion": {
        "type": "identity", "quantity": "diameter", "variable": "x", "value": "diameter(x0)"},
        "families": [data.claim.families[0].to_json()]}, "c.toml").claim
    family = claim.families[0]
    result = judge_request(CheckRequest(claim, family, family.instance(0), None, 5, 11,
                                        "float64"))
    assert result.verdict.value == "violated" and result.basis.value == "estimate"


# ----------------------------------------------------------------- the shrinker
def test_the_shrinker_never_leaves_a_data_hypothesis(tmp_path, monkeypatch):
    """`mean-nonzero-beta-zero`: the counterexample (1,0),(1,0),(1,0),(-1,0) shrinks, but every
    instance the shrinker keeps has Σ x_i(0) ≠ 0 — the pair (1,0),(-1,0) is refused — while
    without the hypothesis the same search shrinks to that pair. (The shrinker's wall-clock
    allowance is lifted: it ends on a minimal instance or its evaluation count, whatever the
    machine's load.)"""
    from verify.run import _check

    monkeypatch.setattr(_check, "MIN_SHRINK_SECONDS", 1e9)
    path = CONJECTURES / "mean-nonzero-beta-zero.toml"
    run = check_conjecture(load_conjecture(path), out_dir=tmp_path / "with", seed=0,
                           instances=1, executor=InlineExecutor())
    assert run.claim_results[0].verdict.value == "refuted"
    shrink = run.extra["shrink"]
    assert shrink["refused"] > 0 and shrink["n"] == [4, 3]
    kept = [r for r in run.records.values() if r["family"] == "shrunk"]
    assert kept
    for record in kept:
        x0 = np.array([[Fraction(v) for v in row] for row in record["inputs"]["x0"]])
        assert any(v != 0 for v in x0.sum(axis=0))
    import tomllib
    from decimal import Decimal

    data = tomllib.loads(path.read_text("utf-8"), parse_float=Decimal)
    data["hypotheses"] = ["is_identity", "beta == 0"]
    without = check_conjecture(parse_conjecture(data, "<no sum hypothesis>"),
                               out_dir=tmp_path / "without", seed=0, instances=1,
                               executor=InlineExecutor())
    assert without.extra["shrink"]["n"] == [4, 2]  # the hypothesis is what kept three tokens


def test_instance_files_take_expressions_and_normalise(tmp_path):
    from verify.model.instance_file import instance_to_toml, load_instance_file

    path = tmp_path / "pent.toml"
    path.write_text('[model]\nV = [[1, 0], [0, 1]]\nform = "x"\nnormalisation = "sphere"\n'
                    '[tokens]\nx0 = [[2, 0], ["cos(2*pi/5)", "sin(2*pi/5)"], [1, 1]]\n'
                    'normalise = true\n', encoding="utf-8")
    inst = load_instance_file(path).instance
    assert inst.x0[0].tolist() == [1, 0] and str(inst.x0[2, 0]) == "sqrt(2)/2"
    again = tmp_path / "again.toml"  # written back with its expressions: the same exact data
    again.write_text(instance_to_toml(inst), encoding="utf-8")
    assert [str(v) for v in load_instance_file(again).instance.x0.flat] == \
        [str(v) for v in inst.x0.flat]
    path.write_text(path.read_text("utf-8").replace("normalise = true", 'normalise = "yes"'),
                    encoding="utf-8")
    with pytest.raises(InvalidArgument, match="tokens.normalise"):
        load_instance_file(path)
