"""The command as a new user meets it: `python -m verify`, the claims from any folder (installed
with the package), help texts whose example files exist."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from verify.cli import build_parser, default_claims_dir

ROOT = Path(__file__).resolve().parents[1]


def verify_cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def help_texts() -> dict[str, str]:
    parser = build_parser()
    texts = {"verify": parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts |= {f"verify {name}": sub.format_help() for name, sub in action.choices.items()}
    return texts


def test_python_dash_m_verify_runs_the_command(tmp_path):
    done = verify_cli("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("verify ")
    done = verify_cli("simulate", str(tmp_path / "missing.toml"), cwd=tmp_path)
    assert done.returncode == 2 and "missing.toml" in done.stderr
    assert "Traceback" not in done.stderr


def test_list_and_show_work_outside_the_repository(tmp_path):
    listed = verify_cli("list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "polytope" in listed.stdout and "Theorem 3.1" in listed.stdout
    shown = verify_cli("show", "polytope", cwd=tmp_path)
    assert shown.returncode == 0 and "polytope — Theorem 3.1" in shown.stdout


def test_claims_dir_defaults_to_the_working_directory_then_the_package(tmp_path):
    installed = Path(build_parser.__code__.co_filename).parent / "claims"  # a wheel's copy
    assert default_claims_dir(tmp_path) in (installed, ROOT / "claims")  # or the checkout's
    (tmp_path / "claims").mkdir()
    assert default_claims_dir(tmp_path) == tmp_path / "claims"


def test_every_example_file_named_in_the_help_exists():
    named = {}
    for command, text in help_texts().items():
        for path in re.findall(r"claims/[\w./*-]+\.(?:toml|md)", text):
            named[path] = command
    assert named, "the help names no example file"
    missing = {p: c for p, c in named.items() if not list(ROOT.glob(p))}
    assert not missing, f"help texts name files that do not exist: {missing}"


def test_the_wheel_ships_the_claims_and_list_reads_them(tmp_path):
    """Build the wheel as `pip install .` does; its verify/claims/ is the repository's claims/,
    and an unpacked copy of the wheel lists them from a folder without claims/."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                            "-w", str(tmp_path / "dist")], capture_output=True, text=True,
                           timeout=600)
    if built.returncode and re.search(r"No matching distribution|Could not find a version|"
                                      r"connection|offline", built.stderr, re.I):
        pytest.skip("building a wheel needs setuptools from a package index: " +
                    built.stderr.strip().splitlines()[-1])
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n.removeprefix("verify/claims/") for n in archive.namelist()
                   if n.startswith("verify/claims/")}
        archive.extractall(tmp_path / "site")
    source = {str(p.relative_to(ROOT / "claims")) for p in (ROOT / "claims").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == source
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r}); "
            "from verify.cli import main; sys.exit(main(sys.argv[1:]))")
    shown = subprocess.run([sys.executable, "-c", code, "show", "polytope"], cwd=elsewhere,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert f"file: {tmp_path / 'site' / 'verify' / 'claims' / 'polytope.toml'}" in shown.stdout
