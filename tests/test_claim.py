"""Tests of verify.claim: claim files, families and generators, hypotheses, verdict rules."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from verify.claim import (
    HYPOTHESES,
    Basis,
    Claim,
    ClaimKind,
    ClaimResult,
    ClaimVerdict,
    Expectation,
    GeneratorSpec,
    InstanceResult,
    InstanceVerdict,
    check_hypotheses,
    exit_code,
    judge_claim,
    judge_comparison,
    judge_instance,
    judge_scope,
    load_claim,
    load_claims,
    parse_claim,
    recheck_record,
    register_hypothesis,
)
from verify.errors import InvalidArgument
from verify.exact import (
    complex_leading_pair,
    exact_det,
    good_triple,
    paranormal,
    qk_positive_definite,
)
from verify.model import Instance, Model
from verify.numerics import ESTIMATE_SAFETY

DATA = Path(__file__).parent / "data" / "claims"
MALFORMED = DATA / "malformed"
F = Fraction


# -- the example claim files -----------------------------------------------------------------
def test_polytope_file_fields():
    path = DATA / "polytope.toml"
    claim = load_claim(path)
    assert claim.id == "polytope" and claim.label == "Theorem 3.1"
    assert claim.kind is ClaimKind.THEOREM and claim.expected is Expectation.HOLDS
    assert not claim.evidence_only
    assert r"\operatorname{conv}\{z_i(t)\}" in claim.statement  # literal string: no escapes
    assert claim.hypotheses == ("plain_model", "is_identity", "qk_positive_definite")
    assert claim.uses == ("hull-nonincreasing",)
    assert [c.type for c in claim.conclusions] == ["converges"]
    assert claim.conclusions[0].parameters["to"] == {"predict": "polytope-S"}
    assert claim.parameters["separation_fraction"] == F(1, 4)  # TOML float read exactly
    assert claim.parameters["min_trend_checkpoints"] == 5
    assert claim.source == str(path)
    assert claim.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert "unstable invariant set" in claim.notes
    paper, spd, square, collinear = claim.families
    assert [f.name for f in claim.families] == [
        "paper-uniform-2d", "spd-3d", "square-with-centre", "collinear-skew-form"]
    assert (paper.kind, paper.count, paper.seed, paper.n, paper.d) == ("random", 6, 2305, 20, 2)
    assert paper.V == GeneratorSpec("identity", {}) and paper.QK == GeneratorSpec("identity", {})
    assert paper.tokens == GeneratorSpec("uniform", {"low": F(-5), "high": F(5)})
    assert (paper.horizon, paper.checkpoints, paper.precision) == (F(10), 41, "auto")
    assert spd.QK.name == "spd-NNt" and (spd.n, spd.d, spd.count, spd.seed) == (12, 3, 4, 7)
    assert (square.kind, square.count, square.seed, square.n, square.d) == ("explicit", 1, None,
                                                                           5, 2)
    assert square.tokens[4] == (F(1, 2), F(1, 2)) and square.precision == 30
    assert collinear.K == ((2, 1), (1, 2)) and collinear.tokens[3] == (F(1, 2), F(1, 2))
    assert claim.family("spd-3d") is spd
    with pytest.raises(InvalidArgument, match="Did you mean 'spd-3d'"):
        claim.family("spd-3")


def test_polytope_instances_are_in_scope():
    claim = load_claim(DATA / "polytope.toml")
    instances = [i for f in claim.families for i in f.instances()]
    assert len(instances) == 6 + 4 + 1 + 1
    assert instances[0].name == "paper-uniform-2d#0" and instances[-1].name == \
        "collinear-skew-form#0"
    for inst in instances:
        scope = check_hypotheses(claim.hypotheses, inst)
        assert scope.holds is True, scope.explanations
    x0 = claim.family("paper-uniform-2d").instance(0).x0
    assert all(F(-5) <= v <= F(5) for v in x0.flat)


def test_boundrj_file_and_the_spec_counterexample():
    claim = load_claim(DATA / "boundrj-step.toml")
    assert claim.kind is ClaimKind.PROOF_STEP and claim.expected is Expectation.FAILS
    assert claim.uses == () and claim.conclusions[0].type == "remainder-bound"
    assert claim.parameters == {"i": 0, "j": 1, "growth": "lambda + |lambda_2|", "fit_from": 2,
                                "rate_excess": F(1, 2)}
    spec, para = claim.families
    assert spec.V == ((0 + 1, 0), (0, 0)) and spec.Q == spec.K == ((1, F(1, 2)), (F(1, 2), 1))
    assert para.V == GeneratorSpec("paranormal", {"lambda": F(1), "dim_F": 1, "rho": F(1, 2),
                                                  "conjugate": True})
    inst = spec.instance(0)
    for name in claim.hypotheses:
        assert HYPOTHESES[name](inst).holds is True
    # independent route: r_2(0) = <A z_1, A(z_2 - z_1)> - a_2 = 5/4 - 1/4 = 1 (exact), where
    # pi_F is the projection on F = span(e_1) along G = span(e_2)
    A, z1, z2 = inst.model.Q, inst.x0[0], inst.x0[1]
    Az1, Adz = A.dot(z1), A.dot(z2 - z1)
    a2 = Az1[0] * Adz[0]
    assert Az1.dot(Adz) == F(5, 4) and a2 == F(1, 4)
    for inst in para.instances():
        check = paranormal(inst.model.V)
        assert check.holds is True and check.data["dim_F"] == 1
        assert check.data["orthogonal"] is False  # conjugate = true: F and G not orthogonal
        assert check_hypotheses(claim.hypotheses, inst).holds is True


def test_claim_json_round_trip():
    for name in ("polytope", "boundrj-step"):
        claim = load_claim(DATA / f"{name}.toml")
        data = json.loads(json.dumps(claim.to_json(), allow_nan=False))
        again = Claim.from_json(data)
        assert again.families == claim.families
        assert (again.id, again.kind, again.hypotheses, again.uses, again.sha256, again.source) \
            == (claim.id, claim.kind, claim.hypotheses, claim.uses, claim.sha256, claim.source)
        assert again.to_json() == data
        fam = again.families[1]
        a, b = fam.instance(1), claim.families[1].instance(1)
        assert (a.x0 == b.x0).all() and (a.model.V == b.model.V).all()


# -- malformed files ---------------------------------------------------------------------------
@pytest.mark.parametrize("name, field, problem", [
    ("missing-field", "conclusion", "missing (required)"),
    ("unknown-key", "hypothesis", "Did you mean 'hypotheses'?"),
    ("unknown-predicate", "hypotheses[0]", "Did you mean 'qk_positive_definite'?"),
    ("unknown-generator", "families[1].V", "Did you mean 'symmetric-MMt'?"),
    ("nonsquare-v", "families[0].V", "must be square (d×d) but has shape (2, 3)"),
    ("nan-v", "families[0].V[0, 1]", "is not finite"),
    ("bad-kind", "kind", "Did you mean 'theorem'?"),
    ("bad-toml", "not valid TOML", "line 16"),
    ("latex-escape", "statement", "literal string"),
])
def test_malformed_files(name, field, problem):
    path = MALFORMED / f"{name}.toml"
    with pytest.raises(InvalidArgument) as info:
        load_claim(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert field in message and problem in message, message


def test_control_file_is_valid():
    assert load_claim(MALFORMED / "_control.toml").id == "control"


def _toy(**changes):
    family = {"name": "u", "kind": "random", "count": 2, "seed": 0, "n": 3, "d": 2,
              "V": "identity", "tokens": "uniform", "horizon": 1}
    family.update(changes.pop("family", {}))
    data = {"id": "toy", "label": "Remark 0", "kind": "remark", "statement": "s",
            "conclusion": {"type": "consensus"}, "expected": "holds", "families": [family]}
    data.update(changes)
    return data


@pytest.mark.parametrize("changes, field, problem", [
    ({"family": {"horizon": -1}}, "families[0].horizon", "must be positive"),
    ({"family": {"seed": None}}, "families[0].seed", "(NoneType) must be an integer"),
    ({"family": {"kind": "explicit"}}, "families[0].kind", "drawn at random"),
    ({"family": {"tokens": "uniform", "V": "scalar-positive"}}, "families[0].V", "needs d = 1"),
    ({"family": {"d": 3, "Q": [[1, 0], [0, 1]]}}, "families[0].d", "inconsistent"),
    ({"family": {"tokens": {"distribution": "uniform", "hgh": 2}}}, "families[0].tokens.hgh",
     "Did you mean 'high'?"),
    ({"family": {"tokens": {"distribution": "uniform", "low": 2}}}, "families[0].tokens",
     "low < high"),
    ({"family": {"model": {"form": "discret"}}}, "families[0].model", "form"),
    ({"family": {"precision": 8}}, "families[0].precision", "digits ≥ 16"),
    ({"id": "Toy_1"}, "id", "kebab-case"),
    ({"expected": "hold"}, "expected", "Did you mean 'holds'?"),
    ({"conclusion": {"type": "consensos"}}, "conclusion.type", "Did you mean 'consensus'?"),
    ({"conclusion": {"type": "converges", "to": {"predict": "polytope-Z"}}},
     "conclusion.to.predict", "Did you mean 'polytope-S'?"),
    ({"uses": ["toy"]}, "uses", "cannot use itself"),
])
def test_malformed_tables(changes, field, problem):
    data = _toy(**changes)
    if data["families"][0].get("seed", 0) is None:
        data["families"][0]["seed"] = None
    with pytest.raises(InvalidArgument) as info:
        parse_claim(data, "toy.toml")
    message = str(info.value)
    assert message.startswith(f"toy.toml: {field}"), message
    assert problem in message, message


def test_load_claims_directory_rules(tmp_path):
    with pytest.raises(InvalidArgument, match=r"polytope.toml: uses\[0\]: unknown claim"):
        load_claims(DATA)  # the fixture directory lacks hull-nonincreasing
    for name in ("polytope", "boundrj-step"):
        shutil.copy(DATA / f"{name}.toml", tmp_path)
    control = (MALFORMED / "_control.toml").read_text()
    (tmp_path / "hull.toml").write_text(control.replace('"control"', '"hull-nonincreasing"'))
    (tmp_path / "_draft.toml").write_text("not toml at all = = =")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.toml").write_text("neither = = =")
    claims = load_claims(tmp_path)
    assert [c.id for c in claims] == ["boundrj-step", "hull-nonincreasing", "polytope"]
    (tmp_path / "dup.toml").write_text(control.replace('"control"', '"polytope"'))
    with pytest.raises(InvalidArgument, match="polytope.toml: id: 'polytope' is also the id of "
                       ".*dup.toml; ids must be unique"):
        load_claims(tmp_path)
    (tmp_path / "dup.toml").unlink()
    cyclic = control.replace('"control"', '"hull-nonincreasing"').replace(
        'hypotheses = ["is_identity"]', 'hypotheses = ["is_identity"]\nuses = ["polytope"]')
    (tmp_path / "hull.toml").write_text(cyclic)
    with pytest.raises(InvalidArgument, match="cycle"):
        load_claims(tmp_path)


# -- families and generators ------------------------------------------------------------------
def _family(**table):
    base = {"id": "g", "label": "Remark 0", "kind": "remark", "statement": "s",
            "conclusion": {"type": "consensus"}, "expected": "open"}
    family = {"name": "f", "kind": "random", "count": 3, "seed": 5, "n": 4, "d": 3,
              "horizon": 1, "tokens": "uniform", "V": "identity"}
    family.update(table)
    return parse_claim(dict(base, families=[family]), "<test>").families[0]


def test_instances_deterministic_and_seeded():
    fam = _family(V="random", QK="random-uniform")
    a, b = fam.instances(), fam.instances()
    for x, y in zip(a, b, strict=True):
        assert (x.x0 == y.x0).all() and (x.model.V == y.model.V).all()
        assert (x.model.K == y.model.K).all()
    assert [i.name for i in a] == ["f#0", "f#1", "f#2"]
    assert not (a[0].x0 == a[1].x0).all()
    c = fam.instances(count=2, seed=6)
    assert (c[0].x0 == a[1].x0).all()  # instance k uses default_rng(seed + k)
    assert not (fam.instances(seed=99)[0].model.V == a[0].model.V).all()
    assert fam.seed_of(2) == 7 and fam.seed_of(0, seed=10) == 10
    # one stream per instance: the tokens are not a replay of the V draws
    assert set(a[0].x0.flat).isdisjoint(set(a[0].model.V.flat))
    # float draws enter exactly at their binary value
    assert all(v.denominator & (v.denominator - 1) == 0 for v in a[0].x0.flat)


def test_generators_keep_their_promises():
    for inst in _family(V="random-good-triple", QK="spd-NNt", count=4).instances():
        m = inst.model
        assert good_triple(m.Q, m.K, m.V).holds is True
        assert qk_positive_definite(m.Q, m.K).holds is True
    for inst in _family(V="symmetric-MMt", count=3).instances():
        V = inst.model.V
        assert (V == V.T).all()  # exactly symmetric
        minors = [exact_det(V[:k, :k]) for k in range(1, 4)]  # Sylvester, exact
        assert all(m > 0 for m in minors)
    for conjugate in (False, True):
        for inst in _family(V={"generator": "paranormal", "dim_F": 2, "lambda": 2,
                               "conjugate": conjugate}).instances():
            check = paranormal(inst.model.V)
            assert check.holds is True and check.value == 2 and check.data["dim_F"] == 2
            assert check.data["orthogonal"] is (not conjugate)
    for inst in _family(V="complex-leading").instances():
        assert complex_leading_pair(inst.model.V).holds is True
    for inst in _family(V="scalar-positive", QK="spd-NNt", d=1, tokens="distinct-1d",
                        n=6).instances():
        assert HYPOTHESES["scalar_positive"](inst).holds is True
        xs = list(inst.x0[:, 0])
        assert xs == sorted(xs) and len(set(xs)) == 6
    inst = _family(tokens={"distribution": "symmetric-pair", "axis": 0}, n=6).instance(0)
    assert (inst.x0[3:, 0] == -inst.x0[:3, 0]).all() and (inst.x0[3:, 1:] == inst.x0[:3, 1:]).all()
    inst = _family(tokens="sphere").instance(0)
    norms = np.linalg.norm(inst.x0_float(), axis=1)
    assert np.allclose(norms, 1, rtol=0, atol=4e-16)
    inst = _family(QK={"generator": "random-uniform", "low": 0, "high": 1}).instance(0)
    assert (inst.model.Q == np.eye(3)).all() and all(0 <= v <= 1 for v in inst.model.K.flat)


def test_model_options_and_heads():
    fam = _family(V="random", heads=2, model={"form": "x", "beta": "1/2"})
    inst = fam.instance(0)
    assert len(inst.model.heads) == 2 and inst.model.beta == F(1, 2)
    assert not (inst.model.heads[0].V == inst.model.heads[1].V).all()
    assert HYPOTHESES["plain_model"](inst).holds is False
    inst = _family(model={"mlp": {"W": "random", "activation": "tanh"}}).instance(0)
    assert inst.model.mlp.activation == "tanh" and inst.model.mlp.W.shape == (3, 3)
    with pytest.raises(InvalidArgument, match="families\\[0\\].model"):
        _family(V="random", heads=2)  # several heads need form = 'x'


# -- hypotheses ---------------------------------------------------------------------------------
def _inst(V, x0=None, Q=None, K=None, **options):
    d = len(V)
    x0 = x0 if x0 is not None else [[i + j for j in range(d)] for i in range(2)]
    return Instance(Model(V=V, Q=Q, K=K, **options), x0, name="hand#0")


@pytest.mark.parametrize("name, inst, holds, words", [
    ("is_identity", _inst([[1, 0], [0, 1]]), True, "I_2"),
    ("is_identity", _inst([[2, 0], [0, 1]]), False, "V[0, 0] = 2"),
    ("is_negative_identity", _inst([[-1, 0], [0, -1]]), True, "-I_2"),
    ("qk_positive_definite", _inst([[1, 0], [0, 1]], K=[[2, 1], [1, 2]]), True, "≻ 0"),
    ("qk_positive_definite", _inst([[1, 0], [0, 1]], K=[[1, 2], [0, 1]]), False,
     "not symmetric"),
    ("qk_positive_definite", _inst([[1, 0], [0, 1]], beta=-1), False, "≤ 0"),
    ("qk_identity", _inst([[1, 0], [0, 1]], Q=[[2, 0], [0, 1]], K=[["1/2", 0], [0, 1]]), True,
     "exactly"),
    ("qk_identity", _inst([[1, 0], [0, 1]], K=[[1, 0], [1, 1]]), False, "[2, 1]"),
    ("qk_identity", _inst([[1, 0], [0, 1]], beta=2), True, "QᵀK = I_2"),  # beta is apart
    ("good_triple", _inst([[2, 0], [0, -1]]), True, "good triple"),
    ("good_triple", _inst([[1, 1], [0, 1]]), False, "not simple"),
    ("good_triple", _inst([[2, 0], [0, 1]], K=[[-1, 0], [0, 1]]), False, "≤ 0"),
    ("paranormal", _inst([[1, 0, 0], [0, 1, 0], [0, 0, "-1/2"]]), True, "dim F = 2"),
    ("paranormal", _inst([[1, 1], [0, 1]]), False, "not"),
    ("good_triple_with_multiplicity", _inst([[1, 0], [0, 0]], K=[[2, 1], [1, 2]]), True,
     "block-diagonal"),
    ("complex_leading_pair", _inst([[0, -2, 0], [2, 0, 0], [0, 0, 1]]), True, "conjugate pair"),
    ("complex_leading_pair", _inst([[3, 0], [0, 1]]), False, "real"),
    ("positive_real_part_count>=1", _inst([[1, 0], [0, -1]]), True, "k = 1"),
    ("positive_real_part_count>=1", _inst([[-1, 0], [0, -2]]), False, "k = 0"),
    ("d == 1", _inst([[3]]), True, "d = 1"),
    ("d >= 2", _inst([[3]]), False, "d = 1"),
    ("distinct_tokens", _inst([[1, 0], [0, 1]], x0=[[1, 2], [0, 0], [1, 2]]), False,
     "tokens 1 and 3 are equal"),
    ("no_antipodal_pair", _inst([[1, 0], [0, 1]], x0=[[2, 1], [0, 1], [-4, -2]]), False,
     "tokens 1 and 3 point in exactly opposite directions"),
    ("no_antipodal_pair", _inst([[1, 0], [0, 1]], x0=[[2, 1], [0, 1], [4, 2]]), True,
     "no two"),
    ("not_at_equilibrium", _inst([[1, 0], [0, 1]], x0=[[1, 0], [0, 1], [1, 1]]), True,
     "certified nonzero"),
    ("not_at_equilibrium", _inst([[0, 0], [0, 0]], x0=[[1, 0], [0, 1]]), False, "exactly 0"),
    ("not_at_equilibrium", _inst([[1, 0], [0, 1]], x0=[[1, 0], [-1, 0]], form="x",
                                 normalisation="sphere"), None, "may be an equilibrium"),
    ("in_open_hemisphere", _inst([[1, 0], [0, 1]], x0=[["1/3", "1/7"], ["-1/5", "1/9"],
                                                      ["1/11", "-1/100"]]), True, "rational w"),
    ("in_open_hemisphere", _inst([[1, 0], [0, 1]], x0=[[1, 0], [0, 1], [-1, -1]]), False,
     "convex combination of tokens [1, 2, 3]"),
    ("distinct_tokens", _inst([[1]], x0=[[1], ["0.5"]]), True, "pairwise distinct"),
    ("scalar_positive", _inst([[2]], Q=[[1]], K=[[3]]), True, "positive"),
    ("scalar_positive", _inst([[-1]]), False, "V = -1"),
    ("plain_model", _inst([[1]], attention="hardmax"), False, "attention='hardmax'"),
    ("plain_model", _inst([[1]]), True, "model (1.1)"),
])
def test_hypotheses_on_hand_made_instances(name, inst, holds, words):
    result = HYPOTHESES[name](inst)
    assert result.holds is holds, result
    assert words in result.explanation, result.explanation


def test_multi_head_and_undecided_hypotheses():
    model = Model(heads=[{"V": [[1, 0], [0, 1]]}, {"V": [[1, 0], [0, 1]]}], form="x")
    inst = Instance(model, [[1, 0], [0, 1]], name="heads#0")
    result = HYPOTHESES["is_identity"](inst)
    assert result.holds is False and "2 heads" in result.explanation

    @register_hypothesis("test_undecided")
    def _undecided(instance):
        return (None, "undecided: the balls overlap.")

    try:
        inst = _inst([[2, 0], [0, 1]])
        assert check_hypotheses(["test_undecided"], inst).holds is None
        assert check_hypotheses(["test_undecided", "is_identity"], inst).holds is False
        out = judge_scope(["test_undecided", "is_identity"], inst, family="hand", seed=3)
        assert out.verdict is InstanceVerdict.OUT_OF_SCOPE and "V[0, 0] = 2" in out.reason
        assert "test_undecided" not in out.reason  # only the failed hypothesis is the reason
        undecided = judge_scope(["test_undecided"], inst, family="hand")
        assert undecided.verdict is InstanceVerdict.INCONCLUSIVE
        with pytest.raises(InvalidArgument, match="already registered"):
            register_hypothesis("test_undecided")(lambda instance: (True, ""))
    finally:
        del HYPOTHESES["test_undecided"]
    with pytest.raises(InvalidArgument, match="Did you mean 'is_identity'"):
        check_hypotheses(["is_identiy"], inst)


# -- verdict rules -----------------------------------------------------------------------------
def _judge(margin, error, basis="estimate", **kw):
    return judge_instance(margin, error, instance="f#0", family="f", basis=basis, **kw)


def test_judge_instance_rules():
    kappa = ESTIMATE_SAFETY
    assert _judge(1e-9, 1e-10).verdict is InstanceVerdict.HOLDS
    assert _judge(kappa * 1e-10, 1e-10).verdict is InstanceVerdict.INCONCLUSIVE  # margin = κ·error
    assert _judge(-1e-11, 1e-10).verdict is InstanceVerdict.INCONCLUSIVE
    assert _judge(-1e-9, 1e-10).verdict is InstanceVerdict.VIOLATED
    assert _judge(float("nan"), 1e-10).verdict is InstanceVerdict.INCONCLUSIVE
    assert _judge(5.0, float("inf")).verdict is InstanceVerdict.INCONCLUSIVE
    assert _judge(F(0), 0, "exact", strict=False).verdict is InstanceVerdict.HOLDS
    assert _judge(F(0), 0, "exact", strict=True).verdict is InstanceVerdict.VIOLATED
    assert _judge(F(-1, 10**30), 0, "exact").verdict is InstanceVerdict.VIOLATED  # sign decides
    with pytest.raises(InvalidArgument, match="must be ≥ 0"):
        _judge(1.0, -1e-3)
    r = judge_comparison(F(5, 4), F(1), 0, relation="<=", instance="b#0", family="b",
                         basis="exact")
    assert r.verdict is InstanceVerdict.VIOLATED and r.evidence["margin"] == "-1/4"
    assert judge_comparison(2.0, 1.0, 1e-3, relation=">=", instance="x", family="x",
                            basis="estimate").verdict is InstanceVerdict.HOLDS
    equal = judge_comparison(1.0, 1.0 + 1e-15, 1e-12, relation="==", instance="x", family="x",
                             basis="estimate")
    assert equal.verdict is InstanceVerdict.INCONCLUSIVE  # numerics never confirm an equality
    assert judge_comparison(F(1), 1, 0, relation="==", instance="x", family="x",
                            basis="exact").verdict is InstanceVerdict.HOLDS
    with pytest.raises(InvalidArgument, match="relation"):
        judge_comparison(1, 1, 0, relation="=<", instance="x", family="x", basis="exact")
    with pytest.raises(InvalidArgument, match="holds needs the margin to exceed"):
        InstanceResult("f#0", "f", 0, "holds", "looked fine", margin=1e-12, error=1e-9)
    with pytest.raises(InvalidArgument, match="a violation must exceed"):
        InstanceResult("f#0", "f", 0, "violated", "looked bad", margin=-1e-12, error=1e-9)


def _claim(kind="theorem", expected="holds"):
    from types import SimpleNamespace
    return SimpleNamespace(id="c", kind=kind, expected=expected)


def _result(verdict, k=0, rechecked=None, counterexample=None, margin=None, error=None):
    return InstanceResult(f"f#{k}", "f", k, verdict, f"reason {k}", {"x": F(1, 3)},
                          margin, error, rechecked, counterexample)


def _violation(k, still_violated: bool, basis="certificate"):
    first = _judge(-1e-6, 1e-8, basis)
    rerun = _judge(-1e-6 if still_violated else 1e-6, 1e-12, basis)
    return InstanceResult(f"f#{k}", "f", k, first.verdict, first.reason, first.evidence,
                          first.margin, first.error,
                          recheck_record(rerun, precision=40, horizon=20),
                          "reports/x/counterexample.toml" if still_violated else None,
                          basis=first.basis)


def test_the_safety_factor_applies_to_estimates_only():
    """An estimate is compared after κ (its coverage, measured by benchmarks/error_coverage.py);
    a rigorous bound and a fit's coverage interval as they are."""
    kappa = ESTIMATE_SAFETY
    between = (1 + kappa) / 2 * 1e-10  # above the error, below κ·error
    assert _judge(between, 1e-10, "estimate").verdict is InstanceVerdict.INCONCLUSIVE
    assert _judge(between, 1e-10, "evidence").verdict is InstanceVerdict.INCONCLUSIVE
    for basis in ("enclosure", "certificate", "fit"):
        assert _judge(between, 1e-10, basis).verdict is InstanceVerdict.HOLDS
    held = _judge(1e-9, 1e-10, "estimate")
    assert held.error == kappa * 1e-10 and held.evidence["error_estimate"] == 1e-10
    assert held.evidence["safety_factor"] == kappa and held.label == "holds (estimate)"


def test_exact_is_said_only_on_the_exact_basis():
    for basis in Basis:
        if basis is Basis.EXACT:
            continue
        for margin in (2, -2):
            r = _judge(margin, 0, basis.value)
            assert "exact" not in r.reason and f"basis: {basis.value}" in r.reason
    assert "exact arithmetic" in _judge(F(1), 0, "exact").reason
    with pytest.raises(InvalidArgument, match="an exact decision has error 0"):
        _judge(1.0, 1e-12, "exact")
    with pytest.raises(InvalidArgument, match="basis="):
        _judge(1.0, 1e-12, "numerical")


@pytest.mark.parametrize("basis", ["estimate", "fit", "evidence"])
def test_a_violation_on_a_weak_basis_never_refutes(basis):
    """Even confirmed by its re-check, a violation that does not rest on exact arithmetic, an
    enclosure or a certificate is reported as "violated (basis)", and the claim is inconclusive."""
    weak = _violation(1, still_violated=True, basis=basis)
    claim = judge_claim(_claim(), [_result("holds", 0), weak])
    assert claim.verdict is ClaimVerdict.INCONCLUSIVE and exit_code([claim]) == 0
    assert f"violated ({basis})" in claim.reason and f"1 violated ({basis})" in claim.text
    assert weak.label == f"violated ({basis})"
    for rigorous in ("exact", "enclosure", "certificate"):
        strong = _violation(1, still_violated=True, basis=rigorous) if rigorous != "exact" else \
            replace(_violation(1, True, "certificate"), basis=Basis.EXACT, error=0.0)
        assert judge_claim(_claim(), [strong]).verdict is ClaimVerdict.REFUTED


def test_vanishing_violation_is_not_a_refutation():
    results = [_result("holds", 0), _violation(1, still_violated=False)]
    claim = judge_claim(_claim(), results)
    assert claim.verdict is ClaimVerdict.INCONCLUSIVE
    assert "disappeared when re-checked at precision 40 and horizon 20" in claim.reason
    assert claim.counts == {"holds": 1, "inconclusive": 1}
    unchecked = _judge(-1e-6, 1e-8)  # a violation never re-checked does not refute either
    assert judge_claim(_claim(), [unchecked]).verdict is ClaimVerdict.INCONCLUSIVE


def test_confirmed_violation_refutes():
    results = [_result("holds", 0), _violation(1, still_violated=True), _result("out-of-scope", 2)]
    claim = judge_claim(_claim(), results)
    assert claim.verdict is ClaimVerdict.REFUTED
    assert claim.text == "refuted: 1 violation confirmed at higher precision"
    assert "reports/x/counterexample.toml" in claim.reason and claim.n_supporting == 1
    assert exit_code([claim]) == 1
    assert exit_code([judge_claim(_claim(expected="fails"), results)]) == 0
    assert exit_code([judge_claim(_claim(kind="conjecture", expected="open"), results)]) == 0
    assert judge_claim(_claim(expected="fails"), results).matches_expected is True


def test_out_of_scope_never_supports():
    theorem = judge_claim(_claim(), [_result("out-of-scope", k) for k in range(3)])
    assert theorem.verdict is ClaimVerdict.INCONCLUSIVE and theorem.n_supporting == 0
    assert "out of scope" in theorem.text
    mixed = judge_claim(_claim(), [_result("holds", 0), _result("out-of-scope", 1),
                                   _result("out-of-scope", 2)])
    assert mixed.verdict is ClaimVerdict.SUPPORTED and mixed.text == "supported on 1 instance"
    assert "2 instances out of scope, not counted" in mixed.reason
    assert judge_claim(_claim(), []).verdict is ClaimVerdict.INCONCLUSIVE
    partial = judge_claim(_claim(), [_result("holds", 0), _result("inconclusive", 1)])
    assert partial.verdict is ClaimVerdict.INCONCLUSIVE and "f#1: reason 1" in partial.reason
    assert exit_code([theorem, mixed, partial]) == 0


def test_nothing_is_ever_proved():
    holds = [_result("holds", k) for k in range(12)]
    for kind in [k.value for k in ClaimKind]:
        scenarios = [holds, [_violation(0, True)], [_violation(0, False)],
                     [_result("out-of-scope", 0)], []]
        for results in scenarios:
            r = judge_claim(_claim(kind=kind), results)
            assert "prove" not in r.text.lower() and "prove" not in r.reason.lower()
    conjecture = judge_claim(_claim(kind="conjecture", expected="open"), holds)
    assert conjecture.text == "supported by evidence on 12 instances"
    assert judge_claim(_claim(kind="open-problem"), holds[:1]).text == \
        "supported by evidence on 1 instance"
    assert judge_claim(_claim(), holds).text == "supported on 12 instances"
    with pytest.raises(InvalidArgument, match="never says 'proved'"):
        ClaimResult("c", "theorem", "holds", "supported", "r", "proved on 3 instances", 3)


def test_results_json_round_trip():
    results = [_result("holds", 0, margin=0.5, error=1e-9), _violation(1, True),
               _result("inconclusive", 2, margin=float("nan"), error=float("inf"))]
    claim = judge_claim(_claim(), results)
    text = json.dumps(claim.to_json(), allow_nan=False)
    again = ClaimResult.from_json(json.loads(text))
    assert again.to_json() == claim.to_json()
    assert again.verdict is ClaimVerdict.REFUTED and again.instances[0] == results[0]
    assert again.instances[1].rechecked["verdict"] == "violated"
    assert again.instances[0].evidence == {"x": "1/3"}
    assert np.isnan(again.instances[2].margin) and again.instances[2].error == float("inf")


