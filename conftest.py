"""Shared test set-up.

The ``numerics`` marker: the tests whose floats depend on how round-off falls (integrators,
error estimates, spectra, limits, symmetry, continuation, the judges' margins) and the docstring
examples of the library. ``.ci/run`` runs the README's test command (everything), then these a
second time under the other BLAS/SIMD kernel set, so that a float compared bit for bit across
code paths cannot land (DEVELOPERS.md). A new test module of numerics goes in
:data:`NUMERICS_MODULES`.

The ``slow`` marker: the tests that must stay slow because what they check is a whole run (the
claim suite end to end, all 72 heads of MiniLM, a check on a Dask cluster, every worked
conjecture) — :data:`SLOW_TESTS`, measured with ``--durations``. The README's command and
``.ci/run`` run them (no ``-m``); ``python -m pytest -m "not slow"`` is the quick loop while
working.
"""

import os
from pathlib import Path

import pytest

# One BLAS thread: the tests multiply small matrices, where threads only add contention
# (the same default as the `verify` command).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# No proofs unless a test asks for one (verify.proof.proof_budget, Budget(proof=...)): the
# paper-suite and search tests judge by estimates, as before; tests/test_proof.py,
# tests/test_certificates.py and tests/test_enclosure.py exercise the proofs.
os.environ.setdefault("VERIFY_PROOF_SECONDS", "0")

NUMERICS_MODULES = {
    "test_certificates.py", "test_consensus_cap.py", "test_continuation.py", "test_dynamics.py",
    "test_enclosure.py", "test_equilibria.py", "test_extrapolation.py", "test_graph.py",
    "test_hyperplanes_boolean.py", "test_judge_engine.py", "test_judge_flow.py",
    "test_judge_limits.py", "test_limits.py", "test_model.py", "test_paper_claims.py",
    "test_polytope.py", "test_proof.py", "test_roundoff.py", "test_simulate.py",
    "test_spectral.py", "test_symmetry.py", "test_power_decay.py", "test_equilibrium_lemma.py",
    "test_hyperplane_drift.py", "test_resume.py", "test_masked_token.py", "test_masked_graph.py",
    "test_masked_cap.py",
}
SLOW_TESTS = {
    "test_suite.py::test_quick_suite_run", "test_suite.py::test_boundrj_counterexample_reproduces",
    "test_weights.py::test_minilm_heads_certified_counts_agree_with_an_independent_float_look",
    "test_cluster.py::test_a_check_gives_the_same_records_sequentially_in_the_pool_and_on_the_"
    "cluster", "test_cluster.py::test_a_run_on_the_cluster_gives_the_records_of_a_local_run",
    "test_check.py::test_a_false_universal_conjecture_is_refuted_shrunk_and_replayed",
    "test_check.py::test_each_example_gets_the_verdict_its_comment_says",
    "test_paper_figures.py::test_makers_registered_once_and_return_captioned_figures",
}
_LIBRARY = Path(__file__).resolve().parent / "verify"


def pytest_configure(config):
    config.addinivalue_line("markers", "numerics: floats whose round-off depends on the CPU's "
                                       "kernels; .ci/run runs them under a second kernel set")
    config.addinivalue_line("markers", "slow: a whole run; deselect with -m 'not slow' while "
                                       "working (the README's command runs it)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.name in NUMERICS_MODULES or _LIBRARY in path.parents:  # + the doctests
            item.add_marker(pytest.mark.numerics)
        if f"{path.name}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
