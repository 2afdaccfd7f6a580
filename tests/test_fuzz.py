"""Property-based fuzzing of the command line: mutated instance files (deleted keys, wrong
types, NaN, huge numbers, unknown names) and generated argument lists. Every input gives an exit
code of the documented set and a clean message, never a traceback.

A CI run makes ~150 examples in all; for a longer local run:
``VERIFY_FUZZ_PROFILE=fuzz-long python -m pytest tests/test_fuzz.py`` (2000 per test).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_claims_helpers import DATA, load_conclusions

import verify.run._runner
from verify.cli import main
from verify.run import InlineExecutor

load_conclusions()

settings.register_profile("fuzz-ci", max_examples=75, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz-long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
PROFILE = settings.get_profile(os.environ.get("VERIFY_FUZZ_PROFILE", "fuzz-ci"))

BASE = {
    "name": "fuzz",
    "model": {"V": [[1, 0], [0, 1]], "Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]],
              "beta": 1, "form": "z", "attention": "softmax"},
    "tokens": {"x0": [[1, 0], [0, 1], ["1/2", "1/2"]]},
    "simulation": {"horizon": 1, "checkpoints": 3, "precision": "float64",
                   "error_estimate": False, "max_steps": 2000},  # slow mutations end soon
}
RANDOM_TOKENS = {"random": {"distribution": "uniform", "low": -1, "high": 1, "n": 3, "seed": 1}}

ODD_VALUES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-300, 0, -1, 10**30, 2**64,
                     True, "", "abc", "1/0", "auto", "float64", "hardmax", "causal", [], [[]],
                     [[1]], [[1, 2, 3]], [["x", 0], [0, 1]], {"a": 1}]),
    st.integers(min_value=-10**6, max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
UNKNOWN_NAMES = st.sampled_from(["VV", "horizn", "tokens", "x1", "precison", "seed", "n", ""])


def toml_value(value) -> str:
    """TOML for the values above (NaN and infinities are TOML floats)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}"
                             for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value.items()) + "}"
    raise TypeError(value)


def toml_document(data: dict) -> str:
    lines = [f'"{k}" = {toml_value(v)}' for k, v in data.items() if not isinstance(v, dict)]
    for key, table in data.items():
        if isinstance(table, dict):
            lines.append(f'\n["{key}"]')
            lines += [f'"{k}" = {toml_value(v)}' for k, v in table.items()]
    return "\n".join(lines) + "\n"


@st.composite
def mutated_instances(draw) -> dict:
    """The base instance file with one to three mutations."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    if draw(st.booleans()):
        data["tokens"] = {"random": dict(RANDOM_TOKENS["random"])}
    for _ in range(draw(st.integers(1, 3))):
        table = draw(st.sampled_from(["model", "tokens", "simulation", "random", None]))
        if table == "random":
            tokens = data.get("tokens")
            target = tokens.get("random") if isinstance(tokens, dict) else None
            if not isinstance(target, dict):
                continue
        elif table is None:
            target = data
        else:
            target = data.get(table)
            if not isinstance(target, dict):
                continue
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        keys = sorted(target)
        if action == "add" or not keys:
            target[draw(UNKNOWN_NAMES)] = draw(ODD_VALUES)
        elif action == "delete":
            del target[draw(st.sampled_from(keys))]
        else:
            key = draw(st.sampled_from(keys))
            target[key] = draw(ODD_VALUES)
    return data


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def assert_clean(code: int, err: str, allowed: set[int]) -> None:
    assert code in allowed, (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        assert err.strip(), "a usage error says what is wrong"


@settings(PROFILE)
@given(mutated_instances())
def test_mutated_instance_files_give_a_result_or_a_clean_error(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        path.write_text(toml_document(data), encoding="utf-8")
        code, _, err = run_cli(["simulate", str(path), "--no-error-estimate"])
    assert_clean(code, err, {0, 1, 2})


FLAG_VALUES = st.one_of(
    st.sampled_from(["-1", "0", "1", "2", "1e9", "1000000000", "nan", "inf", "-inf", "1/3",
                     "auto", "float64", "", "x", "16", "10", "1e-300", "99999999999999999999"]),
    st.integers(-5, 50).map(str),
)
RUN_FLAGS = ["--instances", "--seed", "--precision", "--horizon"]
SIMULATE_FLAGS = ["--horizon", "--checkpoints", "--precision", "--rtol", "--cluster-tolerance"]


@st.composite
def argument_lists(draw) -> list[str]:
    command = draw(st.sampled_from(["simulate", "run", "list", "show", "check"]))
    flags = {"simulate": SIMULATE_FLAGS, "run": RUN_FLAGS, "check": ["--instances", "--seed",
                                                                     "--budget"]}.get(command, [])
    argv = [command]
    if command == "simulate":
        argv.append(draw(st.sampled_from(["{good}", "{claims}", "{missing}", "{binary}"])))
    elif command == "show":
        argv.append(draw(st.sampled_from(["tiny-holds", "tiny", "", "-"])))
    elif command == "check":
        argv.append(draw(st.sampled_from(["{claims}/tiny-holds.toml", "{missing}",
                                          "{binary}"])))
    for flag in draw(st.lists(st.sampled_from(flags), max_size=3, unique=True)) if flags else []:
        argv += [flag, draw(FLAG_VALUES)]
    if command in ("run", "list", "show"):
        argv += ["--claims-dir", "{claims}"]
    if command in ("run", "check"):
        argv += ["--out", "{out}", "--no-figures"]
    if command == "check" and "--budget" not in argv and "--instances" not in argv:
        argv += ["--instances", "1"]
    return argv


@pytest.fixture(scope="module")
def inline_runs():
    """`verify run` judges in this process: forking a pool per example costs seconds each, and
    the pool has its own test (tests/test_interrupt.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verify.run._runner, "new_pool", lambda workers: InlineExecutor())
        yield


@settings(PROFILE)
@given(argument_lists())
def test_generated_arguments_give_a_result_or_a_clean_error(inline_runs, argv):
    with tempfile.TemporaryDirectory() as folder:
        paths = {"claims": Path(folder) / "claims", "out": Path(folder) / "out",
                 "missing": Path(folder) / "missing.toml", "good": Path(folder) / "good.toml",
                 "binary": Path(folder) / "binary.toml"}
        paths["claims"].mkdir()
        shutil.copy(DATA / "tiny-holds.toml", paths["claims"])
        paths["good"].write_text(toml_document(BASE), encoding="utf-8")
        paths["binary"].write_bytes(bytes(range(256)))
        args = [a.format(**paths) for a in argv]
        code, _, err = run_cli(args)
    assert_clean(code, err, {0, 1, 2, 3})
