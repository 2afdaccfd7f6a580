"""Checks of verify.checks.polytopes: claim files load, verdicts match the mathematics, and a
wrong prediction or an instance outside the theorem's regime is not reported as holding."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import verify.checks  # noqa: F401  (registers the checks)
import verify.exact
from verify.checks.polytopes import certified_clusters, identify
from verify.claim import CHECKS, CheckRequest, check_hypotheses, load_claim
from verify.model import Instance, Model

CLAIMS = Path(__file__).resolve().parents[1] / "claims"
FILES = ["hull-nonincreasing", "polytope", "polytope-vertices-generic",
         "collapse-negative-identity", "hyperplanes", "codimension"]
SQUARE = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0, 0]]


def run(check, V, x0, horizon, checkpoints, Q=None, K=None, form="z"):
    inst = Instance(Model(V=V, Q=Q, K=K, form=form), x0, name="t#0")
    request = CheckRequest(None, SimpleNamespace(name="t"), inst, None, Fraction(horizon),
                           checkpoints, "float64", {})
    return CHECKS[check](request)


@pytest.mark.parametrize("name", FILES)
def test_claim_files_load(name):
    claim = load_claim(CLAIMS / f"{name}.toml")
    assert claim.id == name
    assert claim.check in CHECKS
    assert claim.expected == ("open" if claim.kind == "conjecture" else "holds")
    for family in claim.families:      # every family draws, and its first instance is in scope
        inst = family.instances(1)[0]
        assert check_hypotheses(claim.hypotheses, inst).holds is True, (name, family.name)


def test_clusters_and_identification():
    labels, reps, ok = certified_clusters(np.array([[0.0], [0.5e-8], [1e-8]]),
                                          np.array([0.3e-8, 0.3e-8, 0.3e-8]))
    assert not ok                       # a chain 0 ~ 1 ~ 2 with 0, 2 separated: not certified
    j, sub = identify([1.0, 0.0], 1e-6, [[1.0, 1e-7], [0.0, 0.0]], [0.0, 0.0], "x")
    assert (j, sub.status) == (0, "holds")
    assert identify([1.0, 0.0], 1e-6, [[1.0, 1e-3], [0.0, 0.0]], [0.0, 0.0], "x")[1].status \
        == "violated"                   # a perturbed prediction is caught


def test_hull_holds_and_expanding_hull_is_violated():
    x0 = [[0, 0], [2, 0], [0, 2], ["1/2", "1/2"], [1, "1/4"]]
    ok = run("hull_nonincreasing", [[1, 0], [0, 1]], x0, 4, 17)
    assert ok.verdict.value == "holds"
    assert ok.evidence["pairs"]["outside"] == 0 and ok.evidence["pairs"]["inside"] > 0
    bad = run("hull_nonincreasing", [[-1, 0], [0, -1]], x0, 2, 9)   # V = -I: tokens repel
    assert bad.verdict.value == "violated"
    assert bad.evidence["pairs"]["outside"] > 0


def test_polytope_square_with_centre():
    result = run("polytope_limit", [[1, 0], [0, 1]], SQUARE, 8, 33)
    assert result.verdict.value == "holds", result.reason
    S = np.array(result.evidence["S_points"])
    assert len(S) == 9 and result.evidence["S_in_boundary_or_origin"]
    centre = result.evidence["tokens"][4]
    assert not centre["S_point_is_vertex"] and np.allclose(S[centre["S_point"]], 0)


def test_polytope_wrong_form_is_not_supported(monkeypatch):
    """Compute 𝒮 with a wrong form ([[2, 1], [1, 2]] instead of I): the limits at the edge
    midpoints are no longer points of 𝒮, and the check reports a violation."""
    import verify.exact.polytope as poly

    real = poly.polytope_S
    monkeypatch.setattr(verify.exact, "polytope_S",
                        lambda v, B: real(v, [[2, 1], [1, 2]]), raising=False)
    x0 = [[1, 1], [-1, 1], [-1, -1], [1, -1], [1, 0], [-1, 0]]
    result = run("polytope_limit", [[1, 0], [0, 1]], x0, 8, 33)
    assert result.verdict.value == "violated", result.reason


def test_vertices_generic():
    rng = np.random.default_rng(5)
    x0 = rng.uniform(-1, 1, (6, 2))
    assert run("polytope_vertices_generic", [[1, 0], [0, 1]], x0, 10, 21).verdict.value \
        == "holds"
    special = run("polytope_vertices_generic", [[1, 0], [0, 1]], SQUARE, 8, 33)
    assert special.verdict.value != "holds"   # the centre converges to 0, not to a vertex


def test_collapse_negative_identity():
    x0 = [[3, 0], [0, 1], [1, -1]]
    ok = run("collapse_negative_identity", [[-1, 0], [0, -1]], x0, 30, 31, form="x")
    assert ok.verdict.value == "holds", ok.reason
    assert -0.6 < ok.evidence["x_power_law_exponent"] < -0.4      # t^{-1/2}, as §4 says
    bad = run("collapse_negative_identity", [[1, 0], [0, 1]], x0, 6, 25, form="x")
    assert bad.verdict.value == "violated"                          # V = +I: tokens escape


def test_hyperplanes_middle_and_wrong_dual_vector(monkeypatch):
    V = [[2, 0], [0, 1]]
    x0 = [[1, 0], [-1, 0], [0, 1], ["1/2", "1/2"], ["-1/2", "1/2"], [0, "1/4"]]
    ok = run("hyperplanes_limit", V, x0, 8, 33)
    assert ok.verdict.value == "holds", ok.reason
    assert ok.evidence["middle_offsets"] == ["0"]
    real = verify.exact.eigenpair(V)
    fake = SimpleNamespace(left_float=np.array([1.0, 0.25]), radius=0.0, exact=False,
                           eigenvalue=real.eigenvalue)
    monkeypatch.setattr(verify.exact, "eigenpair", lambda V: fake, raising=False)
    bad = run("hyperplanes_limit", V, x0, 8, 33)
    assert bad.verdict.value == "violated", bad.reason   # middle tokens are not at φ* = 0


def test_codimension():
    V = [[0.92761287, 0.94333073, 0.3827744], [0.94333073, 0.59991396, 0.47825472],
         [0.3827744, 0.47825472, 0.46668605]]
    x0 = np.random.default_rng(3).uniform(-5, 5, (6, 3))
    ok = run("codimension_subspaces", V, x0, 10, 41)
    assert ok.verdict.value == "holds" and ok.evidence["k"] == 2
    assert ok.evidence["subspaces"] <= 3
    # V = I_2 (k = 2: the "subspaces" are points) and a square: five limits, beyond three.
    bad = run("codimension_subspaces", [[1, 0], [0, 1]], SQUARE, 8, 33)
    assert bad.verdict.value == "violated" and bad.evidence["subspaces"] == 5
