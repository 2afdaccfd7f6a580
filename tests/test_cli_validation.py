"""Bad input at the command line: exit code 2 and a message naming the flag, file or field,
before any work starts; never a traceback, never a verdict."""

from __future__ import annotations

import shutil

import pytest
from run_claims_helpers import DATA, load_conclusions

from verify.cli import main
from verify.errors import InvalidArgument
from verify.model.resources import (
    MAX_INSTANCES,
    check_horizon,
    check_instances,
    check_memory,
    estimate_bytes,
)

load_conclusions()

INSTANCE = """
[model]
V = {V}
[tokens]
{tokens}
[simulation]
horizon = 1
checkpoints = 3
"""
GOOD_V = "[[1, 0], [0, 1]]"
GOOD_TOKENS = "x0 = [[1, 0], [0, 1]]"


@pytest.fixture
def files(tmp_path):
    """Paths the table below refers to by name."""
    paths = {"tmp": tmp_path, "a_file": tmp_path / "a_file", "a_dir": tmp_path / "a_dir"}
    paths["a_file"].write_text("x\n")
    paths["a_dir"].mkdir()
    paths["good"] = tmp_path / "good.toml"
    paths["good"].write_text(INSTANCE.format(V=GOOD_V, tokens=GOOD_TOKENS))
    paths["binary"] = tmp_path / "binary.toml"
    paths["binary"].write_bytes(bytes(range(256)) * 4)
    paths["huge_v"] = tmp_path / "huge-v.toml"
    paths["huge_v"].write_text(INSTANCE.format(V="[[1e300, 0], [0, 1e300]]", tokens=GOOD_TOKENS))
    paths["huge_n"] = tmp_path / "huge-n.toml"
    paths["huge_n"].write_text(INSTANCE.format(
        V=GOOD_V, tokens='random = { distribution = "uniform", n = 200000, seed = 1 }'))
    paths["sphere"] = tmp_path / "sphere.toml"
    paths["sphere"].write_text(INSTANCE.format(V=GOOD_V, tokens=GOOD_TOKENS).replace(
        "[model]\n", '[model]\nform = "x"\nnormalisation = "sphere"\n'))
    paths["zero_n"] = tmp_path / "zero-n.toml"
    paths["zero_n"].write_text(INSTANCE.format(
        V=GOOD_V, tokens='random = { distribution = "uniform", n = 0, seed = 1 }'))
    claims = tmp_path / "claims"
    claims.mkdir()
    shutil.copy(DATA / "tiny-holds.toml", claims)
    paths["claims"] = claims
    big = tmp_path / "big-claims"
    big.mkdir()
    (big / "tiny-holds.toml").write_text(
        (DATA / "tiny-holds.toml").read_text().replace("n = 5\n", "n = 300000\n"))
    paths["big_claims"] = big
    reports = tmp_path / "reports"
    (reports / "20260101T000000Z-abcdef").mkdir(parents=True)
    (reports / "20260101T000000Z-abcdef" / "results.json").write_text('{"run_id": "x", "verd')
    paths["corrupt_reports"] = reports
    bad_run = tmp_path / "bad-run"
    bad_run.mkdir()
    (bad_run / "run.json").write_text("{")
    paths["bad_run"] = bad_run
    conjecture = (DATA.parents[2] / "claims" / "conjectures" / "polytope-restated.toml").read_text()
    start = conjecture.index("[conclusion]")
    end = conjecture.index("\n[", start + 1)
    for name, function in (("no_file", "nowhere.py:f"), ("no_name", "preds.py:g"),
                           ("says_yes", "preds.py:yes")):
        paths[name] = tmp_path / f"{name}.toml"
        paths[name].write_text(conjecture[:start] + '[conclusion]\ntype = "predicate"\n'
                               f'function = "{function}"\n' + conjecture[end:])
    (tmp_path / "preds.py").write_text("def f(trajectory, instance):\n    return True\n\n\n"
                                       "def yes(trajectory, instance):\n    return 'yes'\n")
    paths["conjecture"] = DATA.parents[2] / "claims" / "conjectures" / "polytope-restated.toml"
    return paths


CASES = [
    # (name, argv with {placeholders}, words expected in stderr)
    ("run negative seed", "run --seed -1 --claims-dir {claims} --out {tmp}/r", ["--seed=-1"]),
    ("run absurd instances", "run --instances 1000000000 --claims-dir {claims}",
     ["--instances=1000000000", "--allow-large"]),
    ("run absurd horizon", "run --horizon 1e6 --claims-dir {claims}",
     ["--horizon=1000000", "--allow-large"]),
    ("run out is a file", "run --claims-dir {claims} --out {a_file}", ["--out=", "is a file"]),
    ("run out unwritable", "run --claims-dir {claims} --out {a_file}/sub",
     ["--out=", "cannot write there"]),
    ("run resume corrupt", "run --resume {bad_run} --claims-dir {claims}",
     ["--resume=", "run.json"]),
    ("run resume not a run", "run --resume {a_dir} --claims-dir {claims}",
     ["--resume=", "not a run directory"]),
    ("run no workers", "run --workers 0 --claims-dir {claims} --out {tmp}/r",
     ["--workers=0", "at least 1"]),
    ("run workers on a cluster",
     "run --workers 4 --scheduler tcp://127.0.0.1:1 --claims-dir {claims} --out {tmp}/r",
     ["--workers", "--scheduler"]),
    ("run huge family", "run --claims-dir {big_claims} --out {tmp}/r",
     ["tiny-holds.toml", "family 'uniform'", "n=300000", "memory", "--allow-large"]),
    ("check negative seed", "check {conjecture} --seed -1 --out {tmp}/r", ["--seed=-1"]),
    ("check absurd instances", "check {conjecture} --instances 1000000000",
     ["--instances=1000000000", "--allow-large"]),
    ("check out is a file", "check {conjecture} --instances 1 --out {a_file}",
     ["--out=", "is a file"]),
    ("check predicate without file", "check {no_file} --instances 1 --out {tmp}/r",
     ["no_file.toml", "conclusion.function", "no file"]),
    ("check predicate without function", "check {no_name} --instances 1 --out {tmp}/r",
     ["no_name.toml", "conclusion.function", "defines no function 'g'", "defines f"]),
    ("check predicate of the wrong type", "check {says_yes} --instances 1 --out {tmp}/r",
     ["says_yes.toml", "conclusion.function", "returned 'yes'", "must return a bool"]),
    ("check endless budget", "check {conjecture} --budget inf", ["--budget=inf", "--allow-large"]),
    ("check nan budget", "check {conjecture} --budget nan", ["--budget=nan", "positive"]),
    ("check binary file", "check {binary} --out {tmp}/r", ["binary.toml", "UTF-8"]),
    ("simulate binary file", "simulate {binary}", ["binary.toml", "UTF-8"]),
    ("simulate overflowing V", "simulate {huge_v}", ["huge-v.toml", "T·|V|", "--precision auto"]),
    ("simulate overflowing V auto", "simulate {huge_v} --precision auto",
     ["huge-v.toml", "T·|V|", "--allow-large"]),
    ("simulate huge random n", "simulate {huge_n}",
     ["huge-n.toml", "n=200000", "memory", "--allow-large"]),
    ("simulate no tokens", "simulate {zero_n}", ["tokens.random.n=0"]),
    ("simulate absurd horizon", "simulate {good} --horizon 1e6", ["--horizon=", "--allow-large"]),
    ("simulate absurd sphere horizon", "simulate {sphere} --horizon 1e6",
     ["--horizon=", "T = 100000", "--allow-large"]),
    ("simulate save to a dir", "simulate {good} --save {a_dir}", ["--save=", ".npz"]),
    ("simulate save not npz", "simulate {good} --save {tmp}/t.txt", ["--save=", ".npz"]),
    ("simulate save unwritable", "simulate {good} --save {a_file}/t.npz",
     ["--save=", "folder"]),
    ("simulate negative tolerance", "simulate {good} --cluster-tolerance -1",
     ["--cluster-tolerance=-1"]),
    ("simulate rtol", "simulate {good} --rtol 2", ["--rtol=2"]),
    ("simulate one checkpoint", "simulate {good} --checkpoints 1", ["--checkpoints=1"]),
    ("list missing reports", "list --claims-dir {claims} --reports {tmp}/nowhere",
     ["--reports=", "not a directory"]),
    ("list corrupt results", "list --claims-dir {claims} --reports {corrupt_reports}",
     ["results.json", "not a readable report"]),
]


@pytest.mark.parametrize("argv, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_naming_the_problem(argv, words, files, capsys):
    args = [part.format(**files) for part in argv.split()]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert captured.err.startswith("verify: error: ")
    for word in words:
        assert word in captured.err


def test_nothing_is_written_before_a_usage_error(files, capsys):
    assert main(["run", "--seed", "-1", "--claims-dir", str(files["claims"]), "--out",
                 str(files["tmp"] / "never")]) == 2
    assert not (files["tmp"] / "never").exists()


def test_the_limits_have_an_override():
    assert estimate_bytes(200_000, 2, "float64") > 2**40  # ≥ 1 TiB: any machine refuses it
    with pytest.raises(InvalidArgument, match="--allow-large"):
        check_memory(200_000, 2, "float64", "f.toml")
    check_memory(200_000, 2, "float64", "f.toml", allow=True)
    assert estimate_bytes(100, 2, 50) > estimate_bytes(100, 2, "float64")
    check_instances(MAX_INSTANCES, "--instances")
    check_instances(MAX_INSTANCES + 1, "--instances", allow=True)
    with pytest.raises(InvalidArgument, match="--instances=0"):
        check_instances(0, "--instances", allow=True)


def test_a_long_horizon_on_the_sphere_needs_no_override():
    """On the sphere the precision is constant in T: T = 10^4 is below its limit, and T·|V| is
    not checked (no e^{tV} is formed); without normalisation the same T needs the flag."""
    check_horizon(10_000, "T", bounded=True)
    with pytest.raises(InvalidArgument, match="--allow-large"):
        check_horizon(10_000, "T")
    with pytest.raises(InvalidArgument, match="T = 100000"):
        check_horizon(200_000, "T", bounded=True)
