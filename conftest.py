"""Shared test set-up.

The ``numerics`` marker: the tests whose floats depend on how round-off falls (integrators,
error estimates, spectra, limits, symmetry, continuation, the judges' margins) and the docstring
examples of the library. ``.ci/run`` runs the README's test command (everything), then these a
second time under the other BLAS/SIMD kernel set, so that a float compared bit for bit across
code paths cannot land (DEVELOPERS.md). A new test module of numerics goes in
:data:`NUMERICS_MODULES`.
"""

import os
from pathlib import Path

import pytest

# One BLAS thread: the tests multiply small matrices, where threads only add contention
# (the same default as the `verify` command).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

NUMERICS_MODULES = {
    "test_consensus_cap.py", "test_continuation.py", "test_dynamics.py", "test_equilibria.py",
    "test_extrapolation.py", "test_graph.py", "test_hyperplanes_boolean.py",
    "test_judge_engine.py", "test_judge_flow.py", "test_judge_limits.py", "test_limits.py",
    "test_model.py", "test_paper_claims.py", "test_polytope.py", "test_roundoff.py",
    "test_simulate.py", "test_spectral.py", "test_symmetry.py",
}
_LIBRARY = Path(__file__).resolve().parent / "verify"


def pytest_configure(config):
    config.addinivalue_line("markers", "numerics: floats whose round-off depends on the CPU's "
                                       "kernels; .ci/run runs them under a second kernel set")


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.name in NUMERICS_MODULES or _LIBRARY in path.parents:  # + the doctests
            item.add_marker(pytest.mark.numerics)
