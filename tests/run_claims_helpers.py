"""Shared by tests/test_run.py and tests/test_report.py: the tiny claims and their conclusions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "run_claims"


def load_conclusions():
    """Import tests/data/run_claims/run_conclusions.py once and register its tiny conclusions."""
    name = "run_claims_test_conclusions"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DATA / "run_conclusions.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    sys.modules[name].ensure_registered()
    return sys.modules[name]
