"""The independent certificate checker (verify.lemmas) and the proofs that feed it
(verify.proof): what it imports, that it accepts what is true and rejects tampering."""

import ast
import copy
import json
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from certificate_helpers import shifted_ball, tampered
from flint import arb, arb_mat

from verify.cli import main
from verify.enclosure import Enclosure
from verify.lemmas import check_certificate, leader_map, sphere_consensus
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof._lemmas import instance_text, try_lemma

LEMMAS = Path(__file__).resolve().parent.parent / "verify" / "lemmas"


def test_the_checker_imports_only_flint_and_the_standard_library():
    """Every import of verify.lemmas, at any depth (inside functions too): python-flint, the
    standard library or verify.lemmas itself — nothing of the integrator or the judges."""
    allowed = set(sys.stdlib_module_names) | {"flint", "__future__"}
    for path in LEMMAS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or name.startswith("verify.lemmas"), (path.name, name)


@pytest.fixture(scope="module")
def certificate():
    """A certificate of the leader-map lemma for five tokens on a line, the middle one held at
    0 by the symmetry x ↦ -x (V = 1): every fact of the escape and order claims."""
    inst = Instance(Model(V=[[1]]), [[-2], [-1], [0], [1], [2]], name="odd#0")
    enc = Enclosure(inst)
    for t in (Fraction(1, 2), Fraction(1)):
        assert enc.advance(t)
        document, why = try_lemma(leader_map.ID, inst, enc, t)
        if document is not None:
            break
    assert document is not None, why
    document["facts"] = [{"fact": "converge"}, {"fact": "bounded-at-most", "at_most": 1},
                         {"fact": "leaders-extreme"}, {"fact": "free-rows", "at_most": 1}]
    return json.loads(json.dumps(document))


def test_a_true_certificate_is_valid(certificate):
    result = check_certificate(certificate)
    assert result.valid, result.reasons
    assert {q.name for q in result.inequalities} >= {"g_out", "rho", "delta"}
    assert result.conclusions["pinned"] == [2]


def test_a_widened_ball_is_rejected(certificate):
    def widen(data):
        data["enclosure"]["tokens"][0][0] = shifted_ball(data["enclosure"]["tokens"][0][0],
                                                        "0.001", widen=True)
    result = tampered(certificate, widen)
    assert not result.valid and any("conclusions" in r or "margin" in r for r in result.reasons)


def test_a_moved_token_is_rejected(certificate):
    def move(data):
        data["enclosure"]["tokens"][4][0] = shifted_ball(data["enclosure"]["tokens"][4][0],
                                                        "1e-9")
    assert not tampered(certificate, move).valid


def test_a_changed_lemma_is_rejected(certificate):
    for other in ("good-triple", sphere_consensus.ID, "no-such-lemma"):
        def change(data, other=other):
            data["lemma"]["id"] = other
        assert not tampered(certificate, change).valid


def test_a_raised_margin_a_changed_limit_and_a_false_fact_are_rejected(certificate):
    def raise_margin(data):
        data["inequalities"][0]["margin"] = shifted_ball(data["inequalities"][0]["margin"], "1")

    def change_limit(data):
        data["conclusions"]["limits"][0][0] = shifted_ball(data["conclusions"]["limits"][0][0],
                                                          "0.5")

    def false_fact(data):
        data["facts"].append({"fact": "free-rows", "at_most": 0})

    def no_symmetry(data):  # then token 2 is not pinned: its missing leader is an error
        data["symmetries"] = []

    def forged_symmetry(data):
        data["symmetries"] = [{"S": [[-1]], "tokens": [4, 3, 2, 0, 1]}]

    for change in (raise_margin, change_limit, false_fact, no_symmetry, forged_symmetry):
        assert not tampered(certificate, change).valid, change.__name__


def test_the_certificate_command_exits_0_for_valid_1_for_rejected(certificate, tmp_path,
                                                                   capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(certificate))
    broken = copy.deepcopy(certificate)
    broken["lemma"]["parameters"]["rho"] = "1/1000000000000000000000000000000000000000"
    bad.write_text(json.dumps(broken))
    assert main(["certificate", str(good)]) == 0
    assert "VALID" in capsys.readouterr().out
    assert main(["certificate", str(good), str(bad), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [o["valid"] for o in out] == [True, False]
    assert main(["certificate", str(tmp_path / "missing.json")]) == 2


def test_sphere_consensus_holds_in_a_quarter_cap_and_not_beyond():
    model = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere")
    inst = read_instance({"instance": instance_text(Instance(model, [[1, 0], [0, 1]]))})
    near = arb_mat([[arb(1), arb(0)], [arb("0.6"), arb("0.8")]])
    far = arb_mat([[arb(1), arb(0)], [arb(-1), arb(0)]])
    assert sphere_consensus.check(inst, Fraction(0), near, {}).holds
    assert not sphere_consensus.check(inst, Fraction(0), far, {}).holds


def test_the_leader_map_fails_when_the_leader_is_not_preferred():
    """Two tokens on a line, each claimed to lead the other's cluster the wrong way round."""
    inst = read_instance({"instance": instance_text(Instance(Model(V=[[1]]), [[1], [2]]))})
    z = arb_mat([[arb(1)], [arb(2)]])
    assert leader_map.check(inst, Fraction(3), z, set(),
                            {"leader_of": [1, 1], "rho": "1/1000", "delta": "1/1000"}).holds
    assert not leader_map.check(inst, Fraction(3), z, set(),
                                {"leader_of": [0, 0], "rho": "1/1000",
                                 "delta": "1/1000"}).holds
