"""`verify run` and `verify check` on a real Dask cluster (a LocalCluster of two worker
processes on 127.0.0.1): the same records as a local run, a killed worker loses nothing and
recomputes nothing finished, lost instances are recomputed on resume (across a switch between
local and cluster), per-instance budgets, and `check`'s pooled search equals its sequential one.

The tiny test conclusions (tests/data/run_claims/run_conclusions.py) are registered on every
worker, restarted ones included, by a worker plugin.
"""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from distributed import LocalCluster, WorkerPlugin
from run_claims_helpers import DATA, load_conclusions, wait_for

from verify.claim import load_claims
from verify.cli import main
from verify.errors import InvalidArgument
from verify.run import (
    Budget,
    InlineExecutor,
    check_conjecture,
    connect,
    parse_conjecture,
    run_claims,
)
from verify.run._ordered import InOrder

load_conclusions()
ROOT = Path(__file__).parent.parent
GATE = Path(__file__).parent / "data" / "run_gate"


class TestConclusions(WorkerPlugin):
    """Registers the tiny test conclusions on a worker when it starts."""

    name = "verify-test-conclusions"

    def setup(self, worker) -> None:
        load_conclusions()


def _setenv(name: str, value: str) -> None:
    os.environ[name] = value


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as local:
        yield local


@pytest.fixture
def pool(cluster):
    pool = connect(cluster.scheduler_address)
    pool.client.register_plugin(TestConclusions())
    yield pool
    pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="module")
def claims():
    found = {c.id: c for c in load_claims(DATA)}
    found.update({c.id: c for c in load_claims(ROOT / "claims") if c.id == "hull-nonincreasing"})
    found.update({c.id: c for c in load_claims(GATE)})
    return found


def lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]


def comparable(records) -> dict:
    """Records without their timings (the only fields allowed to differ between executors)."""
    return {r["key"]: {k: v for k, v in r.items() if k not in ("seconds", "cpu_seconds")}
            for r in records}


def test_a_run_on_the_cluster_gives_the_records_of_a_local_run(claims, pool, tmp_path):
    selected = [claims["hull-nonincreasing"], claims["tiny-refuted"], claims["tiny-raises"]]
    local = run_claims(selected, instances=1, out_dir=tmp_path / "local", progress=False)
    remote = run_claims(selected, instances=1, out_dir=tmp_path / "dask", progress=False,
                        executor=pool)
    assert local.executor == "ProcessPoolExecutor" and remote.executor == "ClusterPool"
    assert comparable(remote.records.values()) == comparable(local.records.values())
    assert len(remote.records) == len(lines(tmp_path / "dask")) == 6
    verdicts = {r["result"]["verdict"] for r in remote.records.values()}
    assert {"holds", "violated", "error"} <= verdicts
    assert (tmp_path / "dask" / "counterexamples" / "tiny-refuted-two-by-two-0.toml").read_text() \
        == (tmp_path / "local" / "counterexamples" / "tiny-refuted-two-by-two-0.toml").read_text()


def test_a_killed_worker_loses_nothing_and_recomputes_nothing_finished(
        claims, pool, tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv("VERIFY_TEST_GATE", str(gate))  # workers restarted by their nanny
    pool.client.run(_setenv, "VERIFY_TEST_GATE", str(gate))
    out = tmp_path / "run"
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(run=run_claims(
        [claims["tiny-gate"]], out_dir=out, executor=pool, progress=False)))
    runner.start()
    try:
        wait_for(lambda: len(list((gate / "pids").glob("*"))) >= 2 if (gate / "pids").is_dir()
                  else None, "both workers inside an instance")
        wait_for(lambda: (out / "instances.jsonl").is_file() and lines(out), "#0 stored")
        finished = [r["key"] for r in lines(out)]
        # the worker that finished #0 (its result already fetched) is now inside another one
        first = dict(line.split() for line in (gate / "calls").read_text().splitlines())
        os.kill(int(first["gate#0"]), signal.SIGKILL)
        wait_for(lambda: len(list((gate / "pids").glob("*"))) >= 3,
                  "the killed worker's instance to start again elsewhere")
    finally:
        (gate / "release").touch()
        runner.join(timeout=120)
    run = outcome["run"]
    stored = lines(out)
    assert sorted(r["key"] for r in stored) == sorted(run.records) and len(stored) == 4
    assert not any(r.get("lost") for r in stored)
    assert {r.verdict.value for r in run.claim_results} == {"supported"}
    calls = [line.split()[0] for line in (gate / "calls").read_text().splitlines()]
    assert calls.count("gate#0") == 1 and finished == ["tiny-gate/gate#0"]
    assert sorted(set(calls)) == ["gate#0", "gate#1", "gate#2", "gate#3"]
    assert len(calls) == 5  # the killed instance, and only it, ran twice


def test_lost_instances_are_recomputed_on_resume_across_local_and_cluster(
        claims, pool, tmp_path):
    selected = [claims["tiny-holds"], claims["tiny-refuted"]]
    out = tmp_path / "run"
    first = run_claims(selected, out_dir=out, executor=_LosesOne("tiny-holds/uniform#1"),
                       progress=False)
    lost = [k for k, r in first.records.items() if r.get("lost")]
    assert lost == ["tiny-holds/uniform#1"]
    assert "the worker raised" in first.records[lost[0]]["result"]["reason"]
    resumed = run_claims(selected, out_dir=out, executor=pool, progress=False, resume=True)
    assert resumed.resumed == len(first.records) - 1
    assert len(lines(out)) == len(first.records) + 1  # only the lost one was computed again
    reference = run_claims(selected, out_dir=tmp_path / "ref", executor=InlineExecutor(),
                           progress=False)
    assert comparable(resumed.records.values()) == comparable(reference.records.values())


class _LosesOne(InlineExecutor):
    """Runs tasks here, except that the instance ``key`` fails as if its worker had died."""

    def __init__(self, key: str) -> None:
        self.key = key

    def submit(self, fn, /, *args, **kwargs):
        if getattr(args[0], "key", None) == self.key:
            return super().submit(_die)
        return super().submit(fn, *args, **kwargs)


def _die():
    raise RuntimeError("KilledWorker: the worker died while running the task (simulated)")


def test_an_instance_over_its_wall_budget_is_inconclusive_budget(claims, pool, tmp_path):
    run = run_claims([claims["hull-nonincreasing"]], instances=1, out_dir=tmp_path / "r",
                     executor=pool, progress=False, budget=Budget(seconds=1e-9))  # the first step
    results = [r["result"] for r in run.records.values()]
    assert results and all(r["verdict"] == "inconclusive" for r in results)
    assert all(r["reason"].startswith("budget: the instance used up its budget (wall time")
               for r in results)
    assert run.claim_results[0].verdict.value == "inconclusive"


def test_an_instance_over_its_memory_budget_is_inconclusive_budget(tmp_path):
    # In the local pool's own processes; the check allocates 256 MiB.
    (claim,) = load_claims(Path(__file__).parent / "data" / "run_memory")
    within = run_claims([claim], out_dir=tmp_path / "a", progress=False,
                        budget=Budget(memory=1024 * 2**20))
    assert [r["result"]["verdict"] for r in within.records.values()] == ["holds"]
    over = run_claims([claim], out_dir=tmp_path / "b", progress=False,
                      budget=Budget(memory=64 * 2**20))
    (result,) = [r["result"] for r in over.records.values()]
    assert result["verdict"] == "inconclusive"
    assert result["reason"].startswith("budget: the instance used up its budget (memory: an "
                                       "allocation beyond the instance's 64 MiB failed")


SEARCH = '''
id = "diameter-grows"
statement = "The diameter of the rescaled tokens never shrinks (false for some V)."
hypotheses = ["plain_model", "qk_identity"]

[conclusion]
type = "monotone"
quantity = "diameter"
direction = "nondecreasing"

[search]
n = [2, 4]
d = [2, 2]
V = ["random"]
QK = ["identity"]
tokens = ["gaussian"]
horizon = 2
checkpoints = 9
'''


# refuted on a rigorous basis: some cross-polytope configurations are exact invariant points
SPHERE_SEARCH = '''
id = "sphere-consensus"
statement = "Post-LN tokens on the circle, V = I, always reach consensus (false)."
hypotheses = ["is_identity", "qk_identity"]

[conclusion]
type = "consensus"
variable = "x"

[search]
n = [2, 4]
d = [2, 2]
V = ["identity"]
QK = ["identity"]
tokens = ["cross-polytope"]
model = { form = "x", normalisation = "sphere" }
horizon = 6
checkpoints = 13
'''


def test_a_check_gives_the_same_records_sequentially_in_the_pool_and_on_the_cluster(
        pool, tmp_path):
    conjecture = parse_conjecture(tomllib.loads(textwrap.dedent(SPHERE_SEARCH)), "<test>")
    runs = {name: check_conjecture(conjecture, out_dir=tmp_path / name, instances=8, seed=3,
                                   executor=executor)
            for name, executor in (("inline", InlineExecutor()), ("pool", None),
                                   ("dask", pool))}
    search = runs["inline"].extra["search"]
    # a counterexample ends the search: the pool and the cluster judged draws past it
    assert search["stopped"] == "found" and search["drawn"] <= 8
    for name in ("pool", "dask"):
        assert comparable(runs[name].records.values()) == \
            comparable(runs["inline"].records.values()), name
        assert {k: v for k, v in runs[name].extra["search"].items() if k != "seconds"} == \
            {k: v for k, v in search.items() if k != "seconds"}
        assert runs[name].extra["shrink"] == runs["inline"].extra["shrink"]
    assert [r.verdict.value for r in runs["dask"].claim_results] == ["refuted"]


def test_the_cli_runs_and_checks_on_a_scheduler(cluster, tmp_path, capsys):
    address = cluster.scheduler_address
    assert main(["run", "hull-nonincreasing", "--instances", "1", "--out", str(tmp_path / "r"),
                 "--no-figures", "--scheduler", address, "--claims-dir",
                 str(ROOT / "claims")]) == 0
    assert "hull-nonincreasing  supported on 4 instances" in capsys.readouterr().out
    path = tmp_path / "c.toml"
    path.write_text(textwrap.dedent(SEARCH), encoding="utf-8")
    assert main(["check", str(path), "--instances", "2", "--seed", "3", "--out",
                 str(tmp_path / "c"), "--no-figures", "--scheduler", address]) == 0
    assert "diameter-grows: supported by evidence" in capsys.readouterr().out


def test_a_scheduler_that_does_not_answer_is_a_usage_error(tmp_path, capsys, monkeypatch):
    with pytest.raises(InvalidArgument, match="no Dask scheduler answered"):
        connect("tcp://127.0.0.1:9", timeout=1)
    monkeypatch.setattr("verify.run._cluster.CONNECT_SECONDS", 1.0)
    assert main(["run", "hull-nonincreasing", "--out", str(tmp_path), "--scheduler",
                 "nowhere:-1", "--claims-dir", str(ROOT / "claims")]) == 2
    assert "--scheduler=nowhere:-1" in capsys.readouterr().err


def test_bad_instance_budgets_are_usage_errors(tmp_path, capsys):
    for flag, value in (("--instance-budget", "0"), ("--instance-memory", "lots"),
                        ("--instance-memory", "-2G")):
        assert main(["run", "hull-nonincreasing", "--out", str(tmp_path), f"{flag}={value}",
                     "--claims-dir", str(ROOT / "claims")]) == 2
        assert f"{flag}=" in capsys.readouterr().err


def _late(k: int, count: int) -> int:
    time.sleep(0.01 * (count - k))  # later submissions finish first
    return k


def test_outcomes_are_taken_in_submission_order_whatever_finishes_first():
    with ThreadPoolExecutor(4) as executor:
        jobs = InOrder(executor, window=4)
        taken = [pair for k in range(8) for pair in jobs.submit(k, _late, k, 8)]
        taken += list(jobs.drain())
    assert [tag for tag, _ in taken] == [future.result() for _, future in taken] == list(range(8))
