"""Shared by tests/test_run.py, tests/test_report.py, tests/test_interrupt.py and
tests/test_cluster.py: the tiny claims, their conclusions, and polling for a condition."""

from __future__ import annotations

import importlib.util
import sys
import time
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


def wait_for(condition, what: str, timeout: float = 120.0):
    """Poll ``condition()`` until it is truthy (a generous bound that only guards a hang)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
