"""`verify check`: search, shrinking, exact invariant sets, metastability, exit codes."""

from __future__ import annotations

import json
import re
import textwrap
from fractions import Fraction
from itertools import count
from pathlib import Path

import pytest

from verify.cli import main
from verify.model.instance_file import load_instance_file
from verify.run import (
    InlineExecutor,
    check_conjecture,
    judge_instance_file,
    load_conjecture,
    parse_conjecture,
)

EXAMPLES = sorted((Path(__file__).parent.parent / "claims" / "conjectures").glob("*.toml"))

# Two tokens on the unit circle, exactly antipodal: an equilibrium of the post-LN dynamics with
# V = I, unstable transversally to the invariant set {x_2 = -x_1}.
ANTIPODAL = [[1, 0], [-1, 0]]


def circle_point(s: Fraction) -> list[str]:
    """The rational point ((1 - s²)/(1 + s²), 2s/(1 + s²)) of the unit circle (angle ≈ 2s)."""
    return [str((1 - s * s) / (1 + s * s)), str(2 * s / (1 + s * s))]


# x_2 rotated off -x_1 by an angle of 1e-6, exactly on the circle.
PERTURBED = [[1, 0], [str(-Fraction(circle_point(Fraction(1, 2_000_000))[0])),
                      circle_point(Fraction(1, 2_000_000))[1]]]


def sphere_consensus(x0, horizon=20, max_horizon=None) -> object:
    parameters = {} if max_horizon is None else {"max_horizon": max_horizon}
    return parse_conjecture({
        "id": "two-on-circle", "statement": "Two tokens on the circle reach consensus.",
        "parameters": parameters,
        "conclusion": {"type": "consensus", "variable": "x"},
        "families": [{"name": "pair", "kind": "explicit", "V": [[1, 0], [0, 1]], "x0": x0,
                      "model": {"form": "x", "normalisation": "sphere"},
                      "horizon": horizon, "checkpoints": 41}]}, "<test>")


def only_record(run) -> dict:
    (record,) = [r for r in run.records.values() if r["family"] == "pair"]
    return record


def test_an_exactly_antipodal_pair_is_judged_by_its_exact_dynamics(tmp_path):
    run = check_conjecture(sphere_consensus(ANTIPODAL), out_dir=tmp_path, instances=1)
    result = only_record(run)["result"]
    assert result["verdict"] == "violated" and result["rechecked"]["verdict"] == "violated"
    assert "symmetr" in json.dumps(result["evidence"]).lower()
    assert result["certificate"]["kind"] == "invariant-point"   # kept on its invariant set
    assert run.claim_results[0].verdict.value == "refuted"


def test_the_same_pair_perturbed_by_1e_6_reaches_consensus_after_metastability(tmp_path):
    # the pair leaves the saddle (rate 0.238) after about ln(1e6)/0.238 ≈ 58: a budget of 160
    run = check_conjecture(sphere_consensus(PERTURBED, max_horizon=160), out_dir=tmp_path,
                           instances=1)
    result = only_record(run)["result"]
    assert result["verdict"] == "holds", result["reason"]
    kinds = [h["end_state"] for h in result["evidence"]["horizons"]]
    assert kinds[0] == "metastable" and kinds[-1] != "metastable"
    assert Fraction(result["evidence"]["horizons"][-1]["horizon"]) > 20


def test_a_run_stalled_near_a_saddle_is_metastable_not_a_final_state(tmp_path):
    conj = sphere_consensus(PERTURBED, horizon=10, max_horizon=15)
    run = check_conjecture(conj, out_dir=tmp_path, instances=1)
    result = only_record(run)["result"]
    assert result["verdict"] == "inconclusive"
    assert "unstable (rate 0.238" in result["reason"] and "t = 15" in result["reason"]
    (attempt,) = result["evidence"]["horizons"]
    assert attempt["end_state"] == "metastable"
    assert run.exit_code == 3


FALSE_DIAMETER = '''
id = "diameter-any-v"
statement = "For any V the diameter of the rescaled tokens never grows."
hypotheses = ["plain_model", "qk_identity"]

[conclusion]
type = "monotone"
quantity = "diameter"
direction = "nonincreasing"

[search]
n = [4, 6]
d = [2, 3]
V = ["random"]
QK = ["identity"]
tokens = ["gaussian"]
horizon = 3
checkpoints = 13
'''


# Refutable on a rigorous basis: exactly symmetric data on the sphere stay on their invariant set
# (the invariant-point certificate, decided at the exact initial tokens).
FALSE_SPHERE = '''
id = "sphere-consensus-all-data"
statement = "Post-LN tokens on the sphere, V = I, always reach consensus."
hypotheses = ["is_identity", "qk_identity", "d >= 2"]

[conclusion]
type = "consensus"
variable = "x"

[search]
n = [2, 4]
d = [2, 3]
V = ["identity"]
QK = ["identity"]
tokens = ["cross-polytope"]
model = { form = "x", normalisation = "sphere" }
horizon = 10
checkpoints = 21
'''


def test_a_false_universal_conjecture_is_refuted_shrunk_and_replayed(tmp_path):
    path = tmp_path / "false.toml"
    path.write_text(textwrap.dedent(FALSE_SPHERE), encoding="utf-8")
    conj = load_conjecture(path)
    run = check_conjecture(conj, out_dir=tmp_path / "out", instances=6, seed=1)
    assert run.claim_results[0].verdict.value == "refuted" and run.exit_code == 1
    shrink = run.extra["shrink"]
    first = run.records[shrink["from"]]
    assert first["result"]["basis"] == "certificate"
    n0, d0 = len(first["inputs"]["x0"]), len(first["inputs"]["x0"][0])
    assert (shrink["minimal_n"], shrink["minimal_d"]) <= (n0, d0)
    minimal = tmp_path / "out" / shrink["counterexample"]
    loaded = load_instance_file(minimal)
    assert (loaded.instance.n, loaded.instance.d) == (shrink["minimal_n"], shrink["minimal_d"])
    assert shrink["within"] == "the hypotheses and the [search] space"
    assert conj.search.contains(loaded.instance) is None
    replay = judge_instance_file(conj, minimal, out_dir=tmp_path / "replay")
    assert replay.claim_results[0].verdict.value == "refuted"
    assert "search" in run.extra and run.extra["search"]["stopped"] == "found"


def test_a_violation_read_off_a_run_is_evidence_not_a_refutation(tmp_path):
    """The diameter grows beyond κ times its error estimate, but a run against its reference
    run is an estimate: "violated (estimate)", the conjecture inconclusive, nothing shrunk."""
    path = tmp_path / "false.toml"
    path.write_text(textwrap.dedent(FALSE_DIAMETER), encoding="utf-8")
    run = check_conjecture(load_conjecture(path), out_dir=tmp_path / "out", instances=4, seed=1)
    verdict = run.claim_results[0]
    assert verdict.verdict.value == "inconclusive" and run.exit_code == 3
    assert "violated (estimate)" in verdict.text and "shrink" not in run.extra
    assert any(r["result"]["basis"] == "estimate" and r["result"]["verdict"] == "violated"
               for r in run.records.values())


def test_the_same_seed_gives_the_same_search(tmp_path):
    conj = parse_conjecture({**_toml(FALSE_DIAMETER), "conclusion": {
        "type": "monotone", "quantity": "diameter", "direction": "nondecreasing"}}, "<t>")
    a = check_conjecture(conj, out_dir=tmp_path / "a", instances=3, seed=5)
    b = check_conjecture(conj, out_dir=tmp_path / "b", instances=3, seed=5)
    assert [r["inputs"] for r in a.records.values()] == [r["inputs"] for r in b.records.values()]


def _toml(text: str) -> dict:
    import tomllib

    return tomllib.loads(textwrap.dedent(text))


def _expected(path: Path) -> str:
    match = re.search(r"^# Finds: (supported|refuted|inconclusive)", path.read_text("utf-8"),
                      re.MULTILINE)
    assert match, f"{path.name} must say what the tool finds ('# Finds: ...')"
    return match.group(1)


def test_at_least_eight_worked_examples_ship():
    assert len(EXAMPLES) >= 8
    assert {_expected(p) for p in EXAMPLES} >= {"supported", "refuted"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_each_example_gets_the_verdict_its_comment_says(path, tmp_path):
    conj = load_conjecture(path)
    run = check_conjecture(conj, out_dir=tmp_path, instances=3, seed=0)
    verdict = run.claim_results[0]
    assert verdict.verdict.value == _expected(path), verdict.reason
    assert "proved" not in verdict.text


def test_the_cli_prints_the_verdict_and_exits_by_it(tmp_path, capsys):
    path = tmp_path / "false.toml"
    path.write_text(textwrap.dedent(FALSE_SPHERE), encoding="utf-8")
    code = main(["check", str(path), "--instances", "6", "--seed", "1", "--out",
                 str(tmp_path / "out"), "--json", "--no-figures"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["verdict"] == "refuted" and data["exit_code"] == 1
    assert Path(data["counterexample"]).is_file() and Path(data["report"]).is_file()


def test_an_interrupted_search_reports_the_draws_it_judged(tmp_path, monkeypatch):
    """Ctrl-C during the search: the summary counts the draws whose records were kept (it said
    0 before), and the run still ends with a report."""
    import verify.run._check as check_module

    spec = _toml(FALSE_DIAMETER)  # with V = I the diameter never grows: no draw stops it
    conj = parse_conjecture({**spec, "search": {**spec["search"], "V": ["identity"]}}, "<t>")
    submit = check_module._DrawJudge.submit
    calls = count()

    def interrupt_at_the_fourth(self, draw):
        if next(calls) == 3:
            raise KeyboardInterrupt
        return submit(self, draw)

    monkeypatch.setattr(check_module._DrawJudge, "submit", interrupt_at_the_fourth)
    run = check_conjecture(conj, out_dir=tmp_path / "out", instances=10, seed=5,
                           executor=InlineExecutor())  # each draw judged when submitted
    search = run.extra["search"]
    drawn = [r for r in run.records.values() if r["family"] == "search"]
    assert search["stopped"] == "interrupted"
    assert search["drawn"] == len(drawn) == 3
