"""Tests of verify.checks.extensions: boundrj-step, polytope-subspace, generic-qk, complex-leading
(the mlp and multi-head open problems have no check yet)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import verify.checks  # noqa: F401  (registers the checks)
from verify.checks.extensions import boundary_depths, f_coordinates
from verify.checks.subspace import _boundary_margins
from verify.claim import CheckRequest, InstanceVerdict, get_check, judge_scope, load_claim
from verify.claim._family_file import parse_family

CLAIMS = Path(__file__).parent.parent / "claims"
MINE = {"boundrj-step": "boundrj_inequality", "polytope-subspace": "polytope_subspace_limit",
        "generic-qk": "leader_clustering", "complex-leading": "no_clustering"}


def _request(claim, family, k=0, **overrides):
    inst = family.instance(k)
    fields = dict(horizon=family.horizon, checkpoints=family.checkpoints,
                  precision=family.precision, parameters=dict(claim.parameters))
    fields.update(overrides)
    return inst, CheckRequest(claim, family, inst, family.seed_of(k), **fields)


def _family(claim, name):
    return next(f for f in claim.families if f.name == name)


@pytest.mark.parametrize("cid", sorted(MINE))
def test_claim_files_load(cid):
    claim = load_claim(CLAIMS / f"{cid}.toml")
    assert claim.id == cid and claim.check == MINE[cid]
    assert str(claim.expected) == {"boundrj-step": "fails", "polytope-subspace": "holds",
                                   "generic-qk": "open", "complex-leading": "open"}[cid]
    get_check(claim.check)  # registered


# ------------------------------------------------------------------------------ boundrj-step
def test_boundrj_counterexample_is_violated_exactly_and_confirmed_numerically():
    claim = load_claim(CLAIMS / "boundrj-step.toml")
    inst, req = _request(claim, _family(claim, "spec-counterexample"))
    assert judge_scope(claim.hypotheses, inst, family="spec-counterexample") is None
    r = get_check(claim.check)(req)
    assert r.verdict is InstanceVerdict.VIOLATED
    assert (r.margin, r.error) == (-1.0, 0.0)                  # rate 2 against λ + |λ_2| = 1
    ev = r.evidence
    assert ev["stationary"] is True
    assert ev["exact"]["r_j(t) at the initial tokens"] == "5/4 - exp(2*t)/4"
    # independent route: the closed form at the checkpoints, against the arb evaluation
    series = ev["r_j along the trajectory"]
    t, values = np.array(series["t"]), np.array(series["r"])
    assert np.allclose(values, 1.25 - np.exp(2 * t) / 4, rtol=1e-14, atol=1e-14)
    fit = ev["fitted_growth_rate"]
    half = fit["coverage"] * fit["std_error"]
    assert fit["rate"] - half > 1 and abs(fit["rate"] - 2) < 1e-3   # far above the bound


def test_boundrj_bound_holds_when_A_preserves_the_splitting():
    claim = load_claim(CLAIMS / "boundrj-step.toml")
    for name, margin in (("block-diagonal-3d", 1.0), ("identity-form-skew-splitting", 0.0)):
        _, req = _request(claim, _family(claim, name))
        r = get_check(claim.check)(req)
        assert r.verdict is InstanceVerdict.HOLDS, (name, r.reason)
        assert (r.margin, r.error) == (margin, 0.0)


def test_boundrj_irrational_root_is_inconclusive_not_holds():
    claim = load_claim(CLAIMS / "boundrj-step.toml")
    fam = parse_family({"name": "nnt", "kind": "explicit", "V": [[1, 0], [0, 0]],
                        "Q": [[1, 0], [1, 1]], "K": [[1, 0], [1, 1]], "x0": [[0, 1], [0, 2]],
                        "horizon": 2}, 0, "<test>")
    _, req = _request(claim, fam)
    r = get_check(claim.check)(req)
    assert r.verdict is InstanceVerdict.INCONCLUSIVE and "rational form" in r.reason


# ------------------------------------------------------------------------------ Theorem 5.2
def test_f_coordinates_are_the_exact_projection():
    C = f_coordinates([[1, 0, 0], [0, 1, 1]], [[1, 1, 0]])
    z = np.array([Fraction(3), Fraction(5), Fraction(-2)], dtype=object)
    c = C.dot(z)
    g = z - c[0] * np.array([1, 0, 0]) - c[1] * np.array([0, 1, 1])
    assert g[0] == g[1] and g[2] == 0                           # the rest lies in G


def test_boundary_depths_against_a_square():
    pts = np.array([[0, 0], [2, 0], [0, 2], [2, 2], [1, 1], [1, 0.5]], dtype=float)
    depth, dim = boundary_depths(pts)
    assert dim == 2 and np.allclose(depth, [0, 0, 0, 0, 1, 0.5])
    depth, dim = boundary_depths(np.array([[0, 0], [1, 1], [2, 2]], dtype=float))
    assert dim == 1 and not depth.any()                        # flat: all on the boundary


def test_interior_limit_is_a_violation_and_origin_is_allowed():
    square = [[1, 1], [1, -1], [-1, 1], [-1, -1]]
    errors = np.full(5, 1e-8)
    margins, errs, _ = _boundary_margins(np.array(square + [[0, 0]], float), errors, 0.25)
    assert np.all(margins > errs)                              # 0 is allowed
    margins, errs, geo = _boundary_margins(np.array(square + [[0.5, 0]], float), errors, 0.25)
    assert -margins[4] > errs[4] and geo["depth"][4] == pytest.approx(0.5)


def test_polytope_subspace_holds_on_the_symmetric_instance():
    claim = load_claim(CLAIMS / "polytope-subspace.toml")
    inst, req = _request(claim, _family(claim, "origin-in-interior"))
    assert judge_scope(claim.hypotheses, inst, family="origin-in-interior") is None
    r = get_check(claim.check)(req)
    assert r.verdict is InstanceVerdict.HOLDS, r.reason
    assert r.evidence["safe_case"] is True
    assert r.evidence["distance_to_0"][4] <= r.evidence["limit_errors"][4]  # stays at 0


def test_polytope_subspace_records_the_open_case():
    claim = load_claim(CLAIMS / "polytope-subspace.toml")
    fam = parse_family({"name": "skew", "kind": "explicit", "V": [[1, 0], [1, "-1/2"]],
                        "x0": [[1, 0], [-1, 1], [2, 3], ["1/2", -1]], "horizon": 8,
                        "checkpoints": 33}, 0, "<test>")
    _, req = _request(claim, fam)
    r = get_check(claim.check)(req)
    assert r.evidence["F_orthogonal_to_G"] is False and r.evidence["safe_case"] is False
    assert r.reason.startswith("[outside the safe case]")
    assert r.verdict is InstanceVerdict.HOLDS, r.reason


# ------------------------------------------------------------------------------ generic-qk
def test_generic_qk_small_instance():
    claim = load_claim(CLAIMS / "generic-qk.toml")
    fam = _family(claim, "identity-v-2d")
    _, req = _request(claim, fam, 1)
    r = get_check(claim.check)(req)
    assert r.verdict is InstanceVerdict.HOLDS, r.reason
    assert r.evidence["clusters"] <= len(r.evidence["leaders"])
    assert r.evidence["boolean_distance"] < 1e-6


def test_generic_qk_outside_its_regime_is_not_support():
    claim = load_claim(CLAIMS / "generic-qk.toml")
    fam = parse_family({"name": "rot", "kind": "explicit", "V": [[0, -1], [1, 0]],
                        "x0": [[1, 0], [0, 1]], "horizon": 2}, 0, "<test>")
    inst, req = _request(claim, fam)
    assert judge_scope(claim.hypotheses, inst, family="rot").verdict.value == "out-of-scope"
    assert get_check(claim.check)(req).verdict is InstanceVerdict.INCONCLUSIVE


# ------------------------------------------------------------------------------ complex-leading
def test_complex_leading_switches_are_counted():
    claim = load_claim(CLAIMS / "complex-leading.toml")
    fam = _family(claim, "rotation-2d")
    inst, req = _request(claim, fam, 1)
    assert judge_scope(claim.hypotheses, inst, family="rotation-2d") is None
    r = get_check(claim.check)(req)
    assert r.verdict is InstanceVerdict.HOLDS and r.evidence["switches"] >= 1
    assert r.error == 0.0 and r.margin == r.evidence["switches"] - 1


def test_complex_leading_check_catches_clustering():
    # V = I clusters (Theorem 3.1): no switch on the tail and stabilised limits -> violated
    claim = load_claim(CLAIMS / "complex-leading.toml")
    fam = parse_family({"name": "clusters", "kind": "explicit", "V": [[1, 0], [0, 1]],
                        "x0": [[2, 0], [0, 2], [1, "1/2"], ["1/2", 1]], "horizon": 10,
                        "checkpoints": 41}, 0, "<test>")
    inst, req = _request(claim, fam)
    assert judge_scope(claim.hypotheses, inst, family="clusters").verdict.value == \
        "out-of-scope"
    r = get_check(claim.check)(req)
    assert r.verdict is InstanceVerdict.VIOLATED and r.evidence["switches"] == 0
