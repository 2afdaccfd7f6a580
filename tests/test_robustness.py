"""Any input, any interruption (issue 22): every command ends with a result or a clear error
(exit 2 for bad usage, 4 when an instance's input cannot be judged), never a traceback, a hang
or a silent death; files are written atomically; limits hold for values read from files as
for the command line."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from run_claims_helpers import DATA, load_conclusions

from verify.atomic import atomic_path, write_atomic
from verify.cli import main

load_conclusions()

CONJECTURE = """
id = "c"
kind = "conjecture"
statement = "x"
hypotheses = {hypotheses}
[conclusion]
type = "converges"
variable = "z"
[[families]]
name = "f"
kind = "explicit"
V = {V}
x0 = [[1, 0], [0, 1]]
horizon = {horizon}
"""

SEARCH = """
id = "s"
kind = "conjecture"
statement = "x"
hypotheses = ["is_identity"]
[conclusion]
type = "consensus"
variable = "x"
[search]
n = [2, 3]
d = {d}
V = ["identity"]
tokens = ["sphere"]
model = {{ form = "x", normalisation = "sphere" }}
horizon = {horizon}
"""


def conjecture(tmp_path, name="c.toml", hypotheses="[]", V="[[1, 0], [0, 1]]", horizon="1"):
    path = tmp_path / name
    path.write_text(CONJECTURE.format(hypotheses=hypotheses, V=V, horizon=horizon))
    return path


def assert_usage_error(capsys, argv, *words):
    """``verify argv`` exits 2 with a one-line message containing ``words``."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("verify: error: ") and "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


# -- pipes ---------------------------------------------------------------------------------------
LAUNCH = "import sys; from verify.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_broken_pipe_to_another_process_is_a_clear_error_not_a_silent_death():
    """The default SIGPIPE action killed a check (exit 141, nothing printed) when its pool wrote
    to a worker stopped at the deadline: a write to a pipe without a reader must raise."""
    code = textwrap.dedent("""
        import os, sys
        import verify.cli as cli
        read, write = os.pipe()
        os.close(read)
        cli._COMMANDS["list"] = lambda args: os.write(write, b"x")
        sys.exit(cli.main(["list"]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "verify: error: a pipe to another process broke" in done.stderr


def test_stdout_closed_by_its_reader_ends_quietly(tmp_path):
    read, write = os.pipe()
    os.close(read)
    done = subprocess.run([sys.executable, "-c", LAUNCH, "list"], stdout=write,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    os.close(write)
    assert done.returncode == 1 and done.stderr == ""


# -- the error outcome ---------------------------------------------------------------------------
def test_an_instance_whose_input_fails_is_an_error_and_the_check_exits_4(tmp_path, capsys):
    path = conjecture(tmp_path, hypotheses='["n / 0 > 1"]')
    assert main(["check", str(path), "--instances", "1", "--out", str(tmp_path / "r"),
                 "--no-figures", "--json"]) == 4
    out = json.loads(capsys.readouterr().out)
    assert out["exit_code"] == 4 and out["counts"] == {"error": 1}
    assert "failed with an error" in out["text"]


def test_a_formula_of_the_wrong_shape_is_an_error(tmp_path, capsys):
    path = tmp_path / "shape.toml"
    path.write_text(CONJECTURE.format(hypotheses="[]", V="[[1, 0], [0, 1]]", horizon=1)
                    .replace('type = "converges"', 'type = "limit"\nequals = "[[1, 2, 3]]"'))
    assert main(["check", str(path), "--instances", "1", "--out", str(tmp_path / "r"),
                 "--no-figures", "--json"]) == 4
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == {"error": 1} and "shape" in out["reason"]


def test_run_exits_4_when_an_instance_fails_and_nothing_expected_is_refuted(tmp_path, capsys):
    folder = tmp_path / "claims"
    folder.mkdir()
    shutil.copy(DATA / "tiny-raises.toml", folder)
    assert main(["run", "--claims-dir", str(folder), "--out", str(tmp_path / "r"),
                 "--no-figures", "--json"]) == 4
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 4


# -- resume ---------------------------------------------------------------------------------------
def test_resume_refuses_to_narrow_the_run(tmp_path, capsys):
    folder = tmp_path / "claims"
    folder.mkdir()
    for cid in ("tiny-holds", "tiny-known-gap"):
        shutil.copy(DATA / f"{cid}.toml", folder)
    base = ["--claims-dir", str(folder), "--no-figures"]
    assert main(["run", *base, "--out", str(tmp_path / "r"), "--json"]) == 0
    run_dir = Path(json.loads(capsys.readouterr().out)["report"]).parent
    before = json.loads((run_dir / "run.json").read_text())["claims"]
    assert_usage_error(capsys, ["run", "tiny-holds", "--resume", str(run_dir), *base],
                       "would drop tiny-known-gap")
    assert json.loads((run_dir / "run.json").read_text())["claims"] == before
    assert main(["run", "--resume", str(run_dir), *base]) == 0  # the whole run, as started
    assert "instances resumed" in capsys.readouterr().out


# -- limits: the command line's, for values read from files ---------------------------------------
@pytest.mark.parametrize("V, horizon, words", [
    ("[[1, 0], [0, 1]]", "1000000", ["families[0].horizon", "beyond T = 1000"]),
    ("[[1, 0], [0, 1]]", "1000000000", ["families[0].horizon"]),
    ("[[1000000, 0], [0, -1000000]]", "10", ["T·|V|", "families[0]"]),
    ('[["1e300", 0], [0, "1e300"]]', "10", ["T·|V|"]),
])
def test_family_values_get_the_command_lines_limits(tmp_path, capsys, V, horizon, words):
    path = conjecture(tmp_path, V=V, horizon=horizon)
    assert_usage_error(capsys, ["check", str(path), "--instances", "1", "--out", str(tmp_path)],
                       *words)


def test_allow_large_lifts_the_file_limits_too(tmp_path):
    from verify.errors import InvalidArgument
    from verify.model.resources import lifted_limits
    from verify.run import load_conjecture

    path = conjecture(tmp_path, horizon="2000")
    with pytest.raises(InvalidArgument, match="beyond T = 1000"):
        load_conjecture(path)
    with lifted_limits():
        assert load_conjecture(path).claim.families[0].horizon == 2000


@pytest.mark.parametrize("d, horizon, words", [
    ("[2, 100000]", "5", ["search.n, search.d", "TiB"]),
    ("[2, 2]", "1000000", ["search.horizon", "beyond T = 100000"]),
])
def test_search_values_get_the_command_lines_limits(tmp_path, capsys, d, horizon, words):
    path = tmp_path / "s.toml"
    path.write_text(SEARCH.format(d=d, horizon=horizon))
    assert_usage_error(capsys, ["check", str(path), "--instances", "1", "--out", str(tmp_path)],
                       *words)


def test_precision_beyond_200_digits_is_refused_everywhere(tmp_path, capsys):
    assert_usage_error(capsys, ["run", "--precision", "400"], "at most 200")
    path = tmp_path / "p.toml"
    path.write_text(CONJECTURE.format(hypotheses="[]", V="[[1, 0], [0, 1]]", horizon=1)
                    + "precision = 400\n")
    assert_usage_error(capsys, ["check", str(path), "--out", str(tmp_path)],
                       "families[0].precision", "at most 200")


@pytest.mark.parametrize("flag, value, words", [
    ("--instance-memory", "inf", ["finite"]),
    ("--instance-memory", "1K", ["below 64 MiB"]),
    ("--instance-budget", "1e-6", ["between 1 and"]),
])
def test_instance_budgets_that_would_cut_off_every_instance(tmp_path, capsys, flag, value,
                                                            words):
    assert_usage_error(capsys, ["run", "tiny-holds", "--claims-dir", str(DATA), "--out",
                                str(tmp_path), flag, value], *words)


def test_a_huge_hypothesis_expression_is_a_clear_error(tmp_path, capsys):
    terms = " + ".join(["n"] * 1200)
    path = conjecture(tmp_path, hypotheses=f'["{terms} > 1"]')
    assert_usage_error(capsys, ["check", str(path), "--out", str(tmp_path)], "hypotheses[0]",
                       "characters long")
    nested = "(" * 300 + "n" + ")" * 300
    path = conjecture(tmp_path, hypotheses=f'["{nested} > 1"]')
    assert_usage_error(capsys, ["check", str(path), "--out", str(tmp_path)], "hypotheses[0]")


# -- the scheduler address ------------------------------------------------------------------------
@pytest.mark.parametrize("address, words", [
    ("foo", ["not a scheduler address"]), ("/tmp/scheduler.json", ["not a scheduler address"]),
    ("http://127.0.0.1:8787", ["not a scheduler address", "dashboard"]),
])
def test_scheduler_addresses_that_are_not_ones(tmp_path, capsys, address, words):
    assert_usage_error(capsys, ["run", "tiny-holds", "--claims-dir", str(DATA), "--out",
                                str(tmp_path), "--scheduler", address], *words)


def test_a_scheduler_address_where_nothing_or_something_else_listens(tmp_path, capsys):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert_usage_error(capsys, ["run", "tiny-holds", "--claims-dir", str(DATA), "--out",
                                str(tmp_path), "--scheduler", f"tcp://127.0.0.1:{port}"],
                       "no Dask scheduler answered, nothing listens")
    with socket.socket() as server:  # a server that waits for a request, like a web server
        server.bind(("127.0.0.1", 0))
        server.listen()
        accepted = []
        threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
        assert_usage_error(capsys, ["run", "tiny-holds", "--claims-dir", str(DATA), "--out",
                                    str(tmp_path), "--scheduler",
                                    f"tcp://127.0.0.1:{server.getsockname()[1]}"],
                           "sent no Dask handshake")
        for connection, _ in accepted:
            connection.close()


# -- files: atomic writes, a full disk ------------------------------------------------------------
def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.html"
    write_atomic(target, "old")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text("half of the n")
        raise KeyboardInterrupt
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_full_disk_is_a_clear_error_naming_the_file(tmp_path, capsys, monkeypatch):
    instance = tmp_path / "two.toml"
    instance.write_text('[model]\nV = [[1, 0], [0, 1]]\n[tokens]\nx0 = [[1, "0.1"], '
                        '[1, "-0.1"]]\n[simulation]\nhorizon = 1\n')

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("verify.atomic.os.replace", full)
    saved = tmp_path / "run.npz"
    assert main(["simulate", str(instance), "--save", str(saved), "--no-error-estimate"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("verify: error: cannot write") and str(saved) in err
    assert "No space left" in err and list(tmp_path.iterdir()) == [instance]


def test_figure_workers_are_started_to_die_with_their_parent(monkeypatch):
    """A report killed mid-way (kill -9) left its two figure workers blocked forever: they are
    made by :func:`verify.run._workers.new_pool`, whose workers die with their parent."""
    from verify.report import html
    from verify.run import _workers

    made, original = [], _workers.new_pool

    def recording(workers):
        made.append(workers)
        return original(workers)

    monkeypatch.setattr(html, "new_pool", recording)  # where the report reads it
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    jobs = {("graph", i): (html.dependency_figures, ({"a": []}, {"a": "supported"}))
            for i in range(2)}
    drawn = html.draw_figures(jobs)
    assert made == [2] and all("<svg" in text for text in drawn.values())
