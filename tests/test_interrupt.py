"""A real `verify run` subprocess interrupted while its workers are busy: SIGTERM keeps what is
stored, leaves no worker behind and says how to resume; SIGKILL of the parent leaves no worker
behind either (they watch their parent); `--resume` then finishes the run.

The claim (tests/data/run_gate/tiny-gate.toml) holds at once on its first instance and makes
every other instance wait for a release file, so the signal always lands while workers are
inside a task; no timing assumption is made.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from run_claims_helpers import wait_for

TESTS = Path(__file__).parent
LAUNCH = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); "
          "from run_claims_helpers import load_conclusions; load_conclusions(); "
          "from verify.cli import main; sys.exit(main(sys.argv[1:]))")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc; the runner's workers are forked")


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def start_run(tmp_path: Path):
    claims = tmp_path / "claims"
    claims.mkdir()
    shutil.copy(TESTS / "data" / "run_gate" / "tiny-gate.toml", claims)
    gate = tmp_path / "gate"
    gate.mkdir()
    env = dict(os.environ, VERIFY_TEST_GATE=str(gate))
    env.pop("CI", None)
    args = ["run", "tiny-gate", "--claims-dir", str(claims), "--out", str(tmp_path / "reports"),
            "--no-figures"]
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stored():
        lines = [line for path in (tmp_path / "reports").glob("*/instances.jsonl")
                 for line in path.read_text().splitlines() if line.strip()]
        waiting = list((gate / "pids").glob("*")) if (gate / "pids").is_dir() else []
        return bool(lines) and bool(waiting)

    try:
        wait_for(stored, "a stored record and a waiting worker")
    except AssertionError:
        proc.kill()
        raise
    workers = children(proc.pid) | {int(p.name) for p in (gate / "pids").glob("*")}
    assert workers and all(alive(pid) for pid in workers)
    return proc, workers, claims, gate, env


def test_sigterm_keeps_the_store_stops_the_workers_and_resume_finishes(tmp_path):
    proc, workers, claims, gate, env = start_run(tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    run_dir = next((tmp_path / "reports").glob("*"))
    assert "interrupted (SIGTERM)" in err and f"verify run --resume {run_dir}" in err
    assert "instances are stored" in err
    wait_for(lambda: not any(alive(pid) for pid in workers), "the workers to end", 30)

    (gate / "release").touch()
    resumed = subprocess.run([sys.executable, "-c", LAUNCH, "run", "--resume", str(run_dir),
                              "--claims-dir", str(claims), "--no-figures"], env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "tiny-gate  supported on 4 instances" in resumed.stdout
    assert "instances resumed" in resumed.stdout
    assert (run_dir / "results.json").exists()


def test_workers_die_with_a_killed_parent(tmp_path):
    proc, workers, *_ = start_run(tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    wait_for(lambda: not any(alive(pid) for pid in workers), "the orphaned workers to end", 30)
    assert workers and not any(alive(pid) for pid in workers)
