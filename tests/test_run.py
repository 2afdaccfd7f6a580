"""Tests of verify.run (the runner, re-checks, counterexamples, resume) and of the claim
commands of the CLI (`verify run`, `verify list`, `verify show`), on tiny claim files with
tiny registered checks (tests/data/run_claims/)."""

from __future__ import annotations

import io
import json
import shutil
from concurrent.futures import Executor
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from run_claims_helpers import DATA, load_conclusions

from verify.claim import load_claims
from verify.cli import main
from verify.errors import InvalidArgument
from verify.model.instance_file import load_instance_file
from verify.proof import PROOF_SECONDS
from verify.run import (
    Budget,
    InlineExecutor,
    Progress,
    ResultStore,
    higher_precision,
    longer_checkpoints,
    new_run_id,
    run_claims,
    run_task,
)
from verify.run._costs import expected_seconds, recorded_seconds
from verify.run._runner import _tasks, expected_cost

CONCLUSIONS_MODULE = load_conclusions()


@pytest.fixture(scope="module")
def claims():
    return {c.id: c for c in load_claims(DATA)}


@pytest.fixture(scope="module")
def inline_run(claims, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    return run_claims(claims.values(), out_dir=out, executor=InlineExecutor(), progress=False)


def verdicts(run):
    return {r.claim: r.verdict.value for r in run.claim_results}


def test_claim_verdicts_follow_the_rules(inline_run):
    assert verdicts(inline_run) == {
        "tiny-flaky": "inconclusive", "tiny-holds": "supported", "tiny-known-gap": "refuted",
        "tiny-out-of-scope": "inconclusive", "tiny-raises": "inconclusive",
        "tiny-refuted": "refuted"}
    by = {r.claim: r for r in inline_run.claim_results}
    assert by["tiny-holds"].text == "supported on 3 instances"  # 1 explicit + 2 random
    assert by["tiny-holds"].counts == {"holds": 3}
    assert by["tiny-out-of-scope"].counts == {"out-of-scope": 1}
    assert "out of scope" in by["tiny-out-of-scope"].text
    assert inline_run.exit_code == 1  # tiny-refuted is expected to hold
    assert len(inline_run.records) == 9
    seeds = sorted(r["seed"] for r in inline_run.claim_records("tiny-holds") if r["seed"])
    assert seeds == [5, 6]


def test_violation_that_disappears_on_recheck_is_not_a_refutation(inline_run):
    (record,) = inline_run.claim_records("tiny-flaky")
    result = record["result"]
    assert result["verdict"] == "violated"
    assert result["rechecked"]["verdict"] == "holds"
    assert result["rechecked"]["precision"] == "auto"     # float64 -> auto
    assert result["rechecked"]["horizon"] == 3            # 2 × 3/2
    assert result["counterexample"] is None
    assert not (inline_run.out_dir / "counterexamples" / "tiny-flaky-pair-0.toml").exists()
    assert "disappeared when re-checked" in inline_run.claim_results[0].reason


def test_persistent_violation_writes_a_counterexample_that_reproduces(inline_run, capsys):
    (record,) = inline_run.claim_records("tiny-refuted")
    result = record["result"]
    assert result["rechecked"] == {"verdict": "violated", "reason": result["rechecked"]["reason"],
                                   "precision": 50, "horizon": 3, "margin": -0.5, "error": 0.0,
                                   "evidence": result["rechecked"]["evidence"]}
    assert result["rechecked"]["evidence"]["margin"] == "-1/2"  # the re-run's own data
    path = inline_run.out_dir / result["counterexample"]
    assert path.name == "tiny-refuted-two-by-two-0.toml"
    loaded = load_instance_file(path)
    model = loaded.instance.model
    half = Fraction(1, 2)
    assert model.V.tolist() == [[1, 0], [0, 0]]
    assert model.Q.tolist() == [[1, half], [half, 1]] == model.K.tolist()
    assert loaded.instance.x0.tolist() == [[0, 1], [0, 2]]
    assert loaded.simulation["precision"] == 50 and loaded.simulation["horizon"] == "3"
    assert main(["simulate", str(path), "--json", "--no-error-estimate"]) == 0
    assert json.loads(capsys.readouterr().out)  # the simulation ran and printed its summary


def test_exceptions_become_errors_with_the_message(inline_run):
    records = inline_run.claim_records("tiny-raises")
    assert len(records) == 2
    assert "failed with an error" in next(
        r.text for r in inline_run.claim_results if r.claim == "tiny-raises")
    for record in records:
        assert record["result"]["verdict"] == "error"
        assert record["exception"] == "ZeroDivisionError: boom"
        assert "boom" in record["result"]["reason"] and "ZeroDivisionError" in record["traceback"]


def test_records_hold_exact_inputs_and_a_reproducing_instance_file(inline_run):
    record = inline_run.claim_records("tiny-holds")[1]  # uniform#0, float64 draws
    x0 = record["inputs"]["x0"]
    assert all(isinstance(v, str) for row in x0 for v in row)
    exact = [[Fraction(v) for v in row] for row in x0]
    assert all(v.denominator & (v.denominator - 1) == 0 for row in exact for v in row)  # dyadic
    claim = load_claims(DATA)[1]
    assert exact == claim.family("uniform").instance(0).x0.tolist()


def test_resume_never_recomputes_finished_instances(claims, tmp_path):
    selected = [claims["tiny-holds"], claims["tiny-flaky"]]
    out = tmp_path / "run"
    first = run_claims(selected, out_dir=out, executor=InlineExecutor(), progress=False)
    lines = (out / "instances.jsonl").read_text().splitlines()
    assert len(lines) == 4
    # an interrupted run: two lines finished, a third cut in the middle of writing
    (out / "instances.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:30])
    kept = {json.loads(line)["key"] for line in lines[:2]}
    CONCLUSIONS_MODULE.CALLS.clear()
    second = run_claims(selected, out_dir=out, executor=InlineExecutor(), progress=False,
                        resume=True)
    called = {c.removesuffix("/re") for c in CONCLUSIONS_MODULE.CALLS}
    assert len(called) == 2 and not called & {k.replace("/", "/", 1) for k in kept}
    assert second.resumed == 2 and second.run_id == first.run_id
    assert verdicts(second) == verdicts(first)
    assert {k: r["result"] for k, r in second.records.items()} == \
        {k: r["result"] for k, r in first.records.items()}
    CONCLUSIONS_MODULE.CALLS.clear()
    third = run_claims(selected, out_dir=out, executor=InlineExecutor(), progress=False,
                       resume=True)
    assert CONCLUSIONS_MODULE.CALLS == [] and third.resumed == 4
    with pytest.raises(InvalidArgument, match="differs from the resumed run"):
        run_claims(selected, out_dir=out, seed=3, executor=InlineExecutor(), resume=True)
    with pytest.raises(InvalidArgument, match="already holds results"):
        run_claims(selected, out_dir=out, executor=InlineExecutor())


def test_default_process_pool_gives_the_same_results(claims, inline_run, tmp_path):
    selected = [claims["tiny-holds"], claims["tiny-raises"], claims["tiny-refuted"]]
    run = run_claims(selected, out_dir=tmp_path / "pool", progress=False)
    assert run.executor == "ProcessPoolExecutor"
    for key, record in run.records.items():
        assert record["result"] == inline_run.records[key]["result"] | {
            "counterexample": record["result"]["counterexample"]}
    assert (tmp_path / "pool" / "counterexamples" / "tiny-refuted-two-by-two-0.toml").exists()


def test_the_number_of_workers_changes_no_result(claims, inline_run, tmp_path, monkeypatch):
    import verify.run._runner as runner

    sizes: list = []
    new_pool = runner.new_pool
    monkeypatch.setattr(runner, "new_pool", lambda n: sizes.append(n) or new_pool(n))
    selected = [claims["tiny-holds"], claims["tiny-refuted"]]
    for workers in (1, 3):
        run = run_claims(selected, out_dir=tmp_path / str(workers), progress=False,
                         workers=workers)
        assert {k: r["result"] for k, r in run.records.items()} == {
            k: inline_run.records[k]["result"] | {"counterexample": r["result"][
                "counterexample"]} for k, r in run.records.items()}
    assert sizes == [1, 3]
    with pytest.raises(InvalidArgument, match="workers=0"):
        run_claims(selected, out_dir=tmp_path / "none", workers=0)


def test_overrides_reach_the_check(claims, tmp_path):
    run = run_claims([claims["tiny-holds"]], instances=1, seed=100, precision=40, horizon="5/2",
                     out_dir=tmp_path / "o", executor=InlineExecutor(), progress=False)
    recs = run.claim_records("tiny-holds")
    assert [r["key"] for r in recs] == ["tiny-holds/square#0", "tiny-holds/uniform#0"]
    assert recs[1]["seed"] == 100 and recs[1]["precision"] == 40 and recs[1]["horizon"] == "5/2"


def test_precision_and_checkpoints_of_a_recheck():
    assert higher_precision("float64", mu=1, horizon=3) == "auto"
    assert higher_precision(30, mu=1, horizon=3) == 50
    assert higher_precision("auto", mu=1, horizon=30) == 56 + 20  # auto: 186 bits ≈ 56 digits
    assert longer_checkpoints(9) == 13 and longer_checkpoints(None) is None
    assert longer_checkpoints((0, 2)) == (0, 3)


def test_progress_bar_only_on_a_terminal_outside_ci(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("CI", raising=False)
    stream = Tty()
    bar = Progress(2, stream=stream)
    bar.update("c/f#0", "holds")
    bar.close()
    assert stream.getvalue().startswith("\r[") and "1/2" in stream.getvalue()
    monkeypatch.setenv("CI", "true")
    assert Progress(2, stream=Tty()).mode == "lines"
    assert Progress(2, stream=io.StringIO(), enabled=None).mode == "lines"
    assert not Progress(2, stream=Tty(), enabled=False).enabled


def test_progress_lines_on_a_non_terminal_show_life_every_interval():
    now, log = [0.0], io.StringIO()
    bar = Progress(4, stream=log, clock=lambda: now[0], interval=30)
    assert log.getvalue() == "progress: 0/4 instances\n"  # at once, before any result
    now[0] = 29.0
    bar.tick()  # nothing finished and < 30 s: quiet
    now[0] = 31.0
    bar.tick()  # nothing finished, 31 s: a line says it is alive
    now[0] = 40.0
    bar.update("c/f#0", "holds")  # the first result: a line
    now[0] = 50.0
    bar.update("c/f#1", "violated")  # 10 s later: quiet
    bar.tick()
    now[0] = 75.0
    bar.update("c/f#2", "holds")  # 35 s after the last line
    now[0] = 76.0
    bar.update("c/f#3", "inconclusive")
    bar.close()  # the final count
    assert log.getvalue().splitlines() == [
        "progress: 0/4 instances",
        "progress: 0/4 instances, 0:31 elapsed",
        "progress: 1/4 instances (1 ok), 0:40 elapsed, about 2:00 left",
        "progress: 3/4 instances (2 ok, 1 violated), 1:15 elapsed, about 0:25 left",
        "progress: 4/4 instances (2 ok, 1 ?, 1 violated), 1:16 elapsed"]


def test_a_piped_cli_run_logs_progress_lines(tmp_path, capsys):
    folder = cli_dir(tmp_path, "tiny-holds")
    assert main(["run", "--claims-dir", str(folder), "--out", str(tmp_path / "r"),
                 "--no-figures"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "progress: 0/3 instances" and err[-1].startswith("progress: 3/3 instances")


def test_run_ids_are_timestamped_and_distinct():
    a, b = new_run_id({}), new_run_id({})
    assert a != b and a[8] == "T" and a[15] == "Z"


def test_store_rejects_a_damaged_middle_line(tmp_path):
    (tmp_path / "instances.jsonl").write_text('{"key": "a"}\nnot json\n{"key": "b"}\n')
    with pytest.raises(InvalidArgument, match="line 2"):
        ResultStore(tmp_path).load()


# ------------------------------------------------------------------------------ CLI
def cli_dir(tmp_path, *ids):
    folder = tmp_path / "claims"
    folder.mkdir()
    for cid in ids:
        shutil.copy(DATA / f"{cid}.toml", folder)
    return folder


def test_cli_run_exit_codes_and_list_show(tmp_path, capsys):
    folder = cli_dir(tmp_path, "tiny-holds", "tiny-known-gap", "tiny-flaky", "tiny-refuted")
    base = ["--claims-dir", str(folder), "--out", str(tmp_path / "reports"), "--no-figures"]
    assert main(["run", "tiny-holds", "tiny-known-gap", *base]) == 0  # a known gap: exit 0
    out = capsys.readouterr().out
    assert "supported on 3 instances" in out and "report:" in out
    assert main(["run", "tiny-refuted", *base, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 1 and data["verdicts"][0]["verdict"] == "refuted"
    run_dir = Path(data["report"]).parent
    assert (run_dir / "results.json").exists() and (run_dir / "counterexamples").is_dir()
    assert main(["list", "--claims-dir", str(folder), "--reports",
                 str(tmp_path / "reports")]) == 0
    listing = capsys.readouterr().out
    assert "tiny-refuted" in listing and "Theorem 0.3" in listing and "refuted: 1" in listing
    assert main(["show", "tiny-holds", "--claims-dir", str(folder)]) == 0
    shown = capsys.readouterr().out
    assert "is_identity" in shown and "uniform (random, 2 instances, seed 5" in shown
    assert "convex hull" in shown
    assert main(["run", "--resume", str(run_dir), "--claims-dir", str(folder),
                 "--no-figures"]) == 1
    assert "1 instances resumed" in capsys.readouterr().out


def test_cli_bad_usage_exits_2_with_a_message(tmp_path, capsys):
    folder = cli_dir(tmp_path, "tiny-holds")
    assert main(["run", "tiny-hold", "--claims-dir", str(folder)]) == 2
    assert "Did you mean 'tiny-holds'?" in capsys.readouterr().err
    assert main(["show", "polytop", "--claims-dir", str(folder)]) == 2
    assert "unknown claim id 'polytop'" in capsys.readouterr().err
    assert main(["run", "--instances", "0", "--claims-dir", str(folder)]) == 2
    assert "--instances=0" in capsys.readouterr().err
    assert main(["run", "--claims-dir", str(tmp_path / "nowhere")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["run", "--resume", str(tmp_path), "--claims-dir", str(folder)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    bad = folder / "broken.toml"
    bad.write_text((DATA / "tiny-flaky.toml").read_text().replace('kind = "lemma"',
                                                                  'kind = "lemmma"'))
    assert main(["list", "--claims-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "broken.toml" in err and "kind" in err and "Did you mean 'lemma'?" in err
    with pytest.raises(SystemExit) as exc:
        main(["run", "--precision", "lots"])
    assert exc.value.code == 2


class _OneAtATime(Executor):
    """Runs each job at once, like :class:`InlineExecutor`, but declares one worker (so the
    runner keeps only two jobs submitted) and records what it was given, in order."""

    workers = 1

    def __init__(self) -> None:
        self.given: list = []

    def submit(self, fn, /, *args, **kwargs):
        self.given.append(args[0].key if fn is run_task else ("side", fn.__name__, args))
        return InlineExecutor().submit(fn, *args, **kwargs)


def test_side_jobs_go_ahead_of_the_instances_not_yet_started(claims, tmp_path):
    seen: list = []

    def side_jobs(claim, records):
        if claim is None:
            return {"start": (pow, (2, 10)), "fails": (int, ("not a number",))}
        seen.append((claim.id, sorted(r["key"] for r in records)))
        return {("claim", claim.id): (len, (records,))}

    pool = _OneAtATime()
    selected = [claims["tiny-holds"], claims["tiny-refuted"]]
    run = run_claims(selected, out_dir=tmp_path / "s", executor=pool, progress=False,
                     side_jobs=side_jobs)
    assert run.side == {"start": 1024, ("claim", "tiny-holds"): 3, ("claim", "tiny-refuted"): 1}
    assert sorted(seen) == [("tiny-holds", sorted(run.records)[:3]),
                            ("tiny-refuted", sorted(run.records)[3:])]  # once, when all done
    assert [g[1] for g in pool.given[:2]] == ["pow", "int"]  # the start's jobs first
    instances = [g for g in pool.given if isinstance(g, str)]
    for claim_id, keys in seen:  # a claim's job precedes every instance submitted after it
        done = max(instances.index(k) for k in keys)
        job = next(i for i, g in enumerate(pool.given) if not isinstance(g, str)
                   and g[2] and isinstance(g[2][0], list) and g[2][0][0]["claim"] == claim_id)
        assert all(pool.given.index(k) < job for k in instances[:done + 1])
        assert all(pool.given.index(k) > job for k in instances[done + 3:])


def test_instances_start_longest_first(claims, tmp_path):
    pool = _OneAtATime()
    run = run_claims(claims.values(), out_dir=tmp_path / "o", executor=pool, progress=False)
    tasks = {t.key: t for t in _tasks(run.claims, None, None, None, None)}
    costs = [expected_cost(tasks[key]) for key in pool.given]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) > 1


def _records(run) -> dict:
    """The stored records without their timings (what must not depend on the order)."""
    return {key: {k: v for k, v in record.items() if k not in ("seconds", "cpu_seconds")}
            for key, record in run.records.items()}


def test_the_seconds_an_earlier_run_recorded_order_the_next(claims, tmp_path):
    history = tmp_path / "reports"
    first = run_claims(claims.values(), out_dir=history / "20260101T000000Z-aaaaaa",
                       progress=False, executor=_OneAtATime())
    static = _submitted(claims, tmp_path / "static")
    # the earlier run's records say the statically cheapest instance took longest
    slow = static[-1]
    store = first.out_dir / "instances.jsonl"
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    for line in lines:
        line["cpu_seconds"] = 100.0 if line["key"] == slow else 1.0
    store.write_text("".join(json.dumps(line) + "\n" for line in lines))
    pool = _OneAtATime()
    again = run_claims(claims.values(), out_dir=history / "20260101T000001Z-bbbbbb",
                       executor=pool, progress=False, history=history)
    assert pool.given[0] == slow and sorted(pool.given) == sorted(static)
    assert _records(again) == _records(first)  # only the order changed
    assert [r.to_json() for r in again.claim_results] == \
        [r.to_json() for r in first.claim_results]
    # another proof budget (or other parameters): the static order
    other = _OneAtATime()
    run_claims(claims.values(), out_dir=history / "20260101T000002Z-cccccc", executor=other,
               progress=False, history=history, budget=Budget(proof=PROOF_SECONDS + 1))
    assert other.given == static


def _submitted(claims, out_dir) -> list:
    pool = _OneAtATime()
    run_claims(claims.values(), out_dir=out_dir, executor=pool, progress=False)
    return pool.given


def test_recorded_seconds_skip_what_does_not_match(claims, tmp_path):
    history = tmp_path / "reports"
    run = run_claims(claims.values(), out_dir=history / "20260101T000000Z-aaaaaa",
                     progress=False, executor=_OneAtATime())
    parameters = run.parameters
    seen = recorded_seconds(history, parameters=parameters, proof=PROOF_SECONDS)
    assert sorted(seen) == sorted(run.records)
    assert recorded_seconds(history, parameters={**parameters, "seed": 7},
                            proof=PROOF_SECONDS) == {}
    assert recorded_seconds(history, parameters=parameters, proof=PROOF_SECONDS + 1) == {}
    assert recorded_seconds(history, parameters=parameters, proof=PROOF_SECONDS,
                            exclude=run.out_dir) == {}
    assert recorded_seconds(tmp_path / "nowhere", parameters=parameters, proof=0) == {}
    # a record of another claim file (its SHA-256) does not count
    tasks = _tasks(run.claims, None, None, None, None)
    key = tasks[0].key
    changed = {key: ("0" * 64, *seen[key][1:])}
    assert expected_seconds(tasks, changed)[key] == expected_cost(tasks[0])


def test_verify_run_does_not_load_the_conjecture_search(tmp_path):
    """Start-up: ``verify run`` (and its forked workers) never use the search of ``verify
    check``, so neither it nor Hypothesis is imported (``verify.run`` loads its conjecture
    modules on first use); ``verify check``'s names are still there."""
    import subprocess
    import sys

    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('loaded:', *[m for m in ('hypothesis', "
            "'verify.search', 'verify.run._check') if m in sys.modules], file=sys.stderr))\n"
            "from verify.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", code, "run", "discrete-rescaling",
                           "--proof-seconds", "0", "--no-figures", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "loaded:"
    from verify import run

    assert run.check_conjecture.__module__ == "verify.run._check"
    assert run.EXIT_CODES is run._check.EXIT_CODES
    with pytest.raises(AttributeError):
        run.no_such_name  # noqa: B018


# ------------------------------------------------------------------ claims sharing one instance
def _pair(k: int = 1) -> tuple:
    """The tasks of polytope and polytope-vertices-generic on instance k of paper-uniform-2d
    (one instance, one horizon, one precision: the same first run), without proofs."""
    from verify.run._runner import _bundles

    paper = {c.id: c for c in load_claims(Path(__file__).parents[1] / "claims")}
    selected = [paper["polytope"], paper["polytope-vertices-generic"]]
    bundles = _bundles(_tasks(selected, None, None, None, None, Budget(proof=0)))
    together = [[t.key for t in b] for b in bundles if len(b) > 1]
    assert together == [[f"polytope/paper-uniform-2d#{i}",
                         f"polytope-vertices-generic/paper-uniform-2d#{i}"] for i in (0, 1)]
    return next(b for b in bundles if len(b) > 1 and b[0].k == k)


def test_claims_judged_on_one_instance_share_its_run(monkeypatch):
    import verify.judge._engine as engine
    from verify.run import run_tasks

    runs: list = []
    simulate = engine.simulate
    monkeypatch.setattr(engine, "simulate", lambda *a, **k: runs.append(simulate(*a, **k))
                        or runs[-1])
    pair = _pair()
    separate = [run_task(task) for task in pair]
    assert len(runs) == 2                                # each integrates its first run
    shared = run_tasks(pair)
    assert len(runs) == 3                                # integrated once for both
    timing = ("seconds", "cpu_seconds")
    for alone, together in zip(separate, shared, strict=True):
        assert {k: v for k, v in alone.items() if k not in timing} == \
            {k: v for k, v in together.items() if k not in timing}
    # the shared run is the very trajectory each separate run computed (same code and
    # arguments in one process: simulate is deterministic)
    for alone in runs[:2]:
        assert alone.times == runs[2].times and alone.stats == runs[2].stats
        for name in ("state", "attention", "scaled_scores", "margins", "error", "entry_error",
                     "margin_error", "score_error"):
            np.testing.assert_array_equal(getattr(alone, name), getattr(runs[2], name))


def test_only_equal_instances_and_arguments_share_a_run(monkeypatch):
    import verify.judge._engine as engine
    from verify.model import Instance, Model
    from verify.numerics._monitor import wall_budget

    calls: list = []
    monkeypatch.setattr(engine, "simulate", lambda *a, **k: calls.append((a, k)) or len(calls))
    model = Model(V=[[1, 0], [0, 1]])
    x0 = [[1, 0], [0, 1], ["-1", "-1/2"]]
    times = [Fraction(0), Fraction(1), Fraction(2)]
    with engine.shared_runs() as runs:
        first = engine._first_run(Instance(model, x0, "a"), Fraction(2), times, "float64")
        assert engine._first_run(Instance(Model(V=[[1, 0], [0, 1]]), x0, "a"), Fraction(2),
                                 list(times), "float64") == first
        others = [engine._first_run(Instance(model, x0, "b"), Fraction(2), times, "float64"),
                  engine._first_run(Instance(model, [[1, 0], [0, 1], [-1, "-1/3"]], "a"),
                                    Fraction(2), times, "float64"),
                  engine._first_run(Instance(model, x0, "a"), Fraction(3), times, "float64"),
                  engine._first_run(Instance(model, x0, "a"), Fraction(2), times[:2], "float64"),
                  engine._first_run(Instance(model, x0, "a"), Fraction(2), times, "auto")]
        assert len(runs) == 6 and others == [2, 3, 4, 5, 6]
    engine._first_run(Instance(model, x0, "a"), Fraction(2), times, "float64")
    assert len(calls) == 7                               # outside the block: nothing shared
    with engine.shared_runs() as runs, wall_budget(600.0):  # a budgeted run stops on its own
        engine._first_run(Instance(model, x0, "a"), Fraction(2), times, "float64")
        engine._first_run(Instance(model, x0, "a"), Fraction(2), times, "float64")
        assert not runs and len(calls) == 9


class _LosesBundles(Executor):
    """Runs jobs at once, but a bundle of tasks fails as if its worker had died."""

    def submit(self, fn, /, *args, **kwargs):
        from verify.run import run_tasks

        if fn is run_tasks:
            def lost(*_args):
                raise RuntimeError("worker died")
            return InlineExecutor().submit(lost)
        return InlineExecutor().submit(fn, *args, **kwargs)


def test_a_lost_bundle_stores_each_of_its_tasks_as_lost(tmp_path, monkeypatch):
    import verify.run._runner as runner

    pair = _pair(0)
    monkeypatch.setattr(runner, "_tasks", lambda *args: list(pair))
    run = run_claims([pair[0].claim, pair[1].claim], out_dir=tmp_path / "l",
                     executor=_LosesBundles(), progress=False)
    assert sorted(run.records) == sorted(t.key for t in pair)
    assert all(r.get("lost") and "worker died" in r["exception"] for r in run.records.values())
