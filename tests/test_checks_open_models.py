"""Tests of verify.checks.open_models: the mlp and multi-head open problems (evidence only)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import verify.checks  # noqa: F401  (registers the checks)
from verify.checks.open_models import diameter_series, leading_left_eigenvector, mlp_regime
from verify.claim import CheckRequest, InstanceVerdict, get_check, judge_scope, load_claim
from verify.model import Instance, Model

CLAIMS = Path(__file__).parent.parent / "claims"
MINE = {"mlp": "mlp_observation", "multi-head": "multihead_directions"}
I2 = [[1, 0], [0, 1]]


def _family(claim, name):
    return next(f for f in claim.families if f.name == name)


def _request(claim, family, inst, *, horizon=None, checkpoints=None, **parameters):
    params = dict(claim.parameters)
    params.update({k: Fraction(v) for k, v in parameters.items()})
    return CheckRequest(claim, family, inst, None, horizon=horizon or family.horizon,
                        checkpoints=checkpoints or family.checkpoints, precision="float64",
                        parameters=params)


@pytest.mark.parametrize("cid", sorted(MINE))
def test_claim_files_load(cid):
    claim = load_claim(CLAIMS / f"{cid}.toml")
    assert claim.id == cid and claim.check == MINE[cid]
    assert str(claim.kind) == "open-problem" and str(claim.expected) == "open"
    get_check(claim.check)
    for family in claim.families:                   # every default instance is in scope
        for inst in family.instances():
            assert judge_scope(claim.hypotheses, inst, family=family.name) is None


def test_mlp_families_cover_the_three_reported_cases():
    claim = load_claim(CLAIMS / "mlp.toml")
    regimes = {f.name: mlp_regime(f.instance(0).model) for f in claim.families}
    assert regimes == {"relu-identity": "hyperplanes", "tanh-identity": "collapse",
                       "relu-random-w": "collapse", "tanh-identity-v": "collapse"}
    assert mlp_regime(Model(V=I2)) == "unreported"
    assert mlp_regime(Model(V=I2, mlp={"W": I2, "activation": "identity"})) == "unreported"


def test_leading_left_eigenvector_against_the_exact_one():
    import sympy as sp

    V = [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]]
    M = sp.Matrix([[sp.Rational(x) for x in row] for row in V])
    (lam, _, vecs), = [e for e in M.T.eigenvects() if sp.re(e[0]) > 1]
    exact = np.array([float(v) for v in vecs[0] / vecs[0].norm()])
    phi, lam_f, err = leading_left_eigenvector(V)
    assert abs(lam_f - float(lam)) < 1e-14
    assert np.max(np.abs(phi - np.sign(exact[0]) * exact)) <= err < 1e-12
    assert leading_left_eigenvector([[0, -1], [1, 0]]) is None      # complex pair


def test_diameter_series_bounds_a_perturbation():
    rng = np.random.default_rng(0)
    S = rng.uniform(-1, 1, (3, 5, 2))
    err = np.full((3, 5), 1e-6)
    D, De = diameter_series(S, err)
    Dp, _ = diameter_series(S + rng.uniform(-1e-6, 1e-6, S.shape), err)
    assert np.all(np.abs(Dp - D) <= De)


def test_mlp_consensus_holds_when_tokens_merge():
    """tanh, W = V = I: tokens 1, 2 attend to token 0 (hardmax limit) and merge with it."""
    claim = load_claim(CLAIMS / "mlp.toml")
    inst = Instance(Model(V=I2, mlp={"W": I2, "activation": "tanh"}),
                    [[1, 0], ["1/2", "1/10"], ["1/2", "-1/10"]], name="merge#0")
    r = get_check("mlp_observation")(_request(claim, _family(claim, "tanh-identity"), inst,
                                              horizon=8, checkpoints=33))
    assert r.verdict is InstanceVerdict.HOLDS, r.reason
    assert r.evidence["limit_diameter"] <= 1e-8


def test_mlp_frozen_square_is_not_a_collapse():
    """V = I, the square's corners: P → I, the tokens stop where they are (|z_i − z_j| = 2·…):
    consensus is violated beyond the error bars."""
    claim = load_claim(CLAIMS / "mlp.toml")
    family = _family(claim, "tanh-identity-v")
    r = get_check(claim.check)(_request(claim, family, family.instance(0)))
    assert r.verdict is InstanceVerdict.VIOLATED, r.reason
    assert r.evidence["limit_diameter"] > 1.5 and r.margin < -r.error


def test_mlp_tanh_identity_diameter_grows():
    claim = load_claim(CLAIMS / "mlp.toml")
    family = _family(claim, "tanh-identity")
    r = get_check(claim.check)(_request(claim, family, family.instance(0)))
    assert r.verdict is InstanceVerdict.VIOLATED, r.reason
    fit = r.evidence["fitted_log_diameter_slope"]
    assert fit["slope"] > fit["coverage"] * fit["std_error"] > 0
    D = np.array(r.evidence["diameter"])
    assert D[-1] > D[len(D) // 2]                                  # independent of the fit


def test_mlp_relu_identity_coordinates_never_decrease():
    claim = load_claim(CLAIMS / "mlp.toml")
    family = _family(claim, "relu-identity")
    r = get_check(claim.check)(_request(claim, family, family.instance(0)))
    assert r.verdict is not InstanceVerdict.VIOLATED, r.reason
    assert r.evidence["regime"] == "hyperplanes" and "phi_limits" in r.evidence


def test_mlp_unreported_variant_is_inconclusive():
    claim = load_claim(CLAIMS / "mlp.toml")
    inst = Instance(Model(V=I2, mlp={"W": I2, "activation": "identity"}), [[1, 0], [0, 1]])
    r = get_check(claim.check)(_request(claim, claim.families[0], inst))
    assert r.verdict is InstanceVerdict.INCONCLUSIVE


# ------------------------------------------------------------------------------ multi-head
TWO_HEADS = [{"V": [[1, 0], [0, "1/2"]]}, {"V": [["1/2", "1/4"], ["1/4", 1]]}]
X0 = [[1, "1/5"], ["4/5", "-1/2"], ["-3/10", "9/10"], [-1, "-2/5"], ["1/10", -1], ["1/2", "1/2"]]


def _numpy_layers(x, heads, h, layers):
    """The recursion x[k+1] = x[k] + h Σ_heads P^h V_h x[k] in plain numpy (independent)."""
    x = np.array(x, dtype=float)
    for _ in range(layers):
        step = np.zeros_like(x)
        for V in heads:
            S = x @ x.T
            P = np.exp(S - S.max(axis=1, keepdims=True))
            P /= P.sum(axis=1, keepdims=True)
            step += P @ x @ V.T
        x = x + h * step
    return x


def test_multihead_explicit_two_heads_cluster_and_match_numpy():
    claim = load_claim(CLAIMS / "multi-head.toml")
    inst = Instance(Model(heads=TWO_HEADS, form="discrete", h="1/10"),
                    [[Fraction(v) for v in row] for row in X0], name="two#0")
    r = get_check(claim.check)(_request(claim, claim.families[0], inst, horizon=20,
                                        checkpoints=41))
    assert r.verdict is InstanceVerdict.HOLDS, r.reason
    ev = r.evidence
    assert ev["certified"] and ev["clusters"] <= 3
    x = _numpy_layers([[float(Fraction(v)) for v in row] for row in X0],
                      [np.array([[1, 0], [0, .5]]), np.array([[.5, .25], [.25, 1]])], 0.1, 200)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    lim, err = np.array(ev["direction_limits"]), np.array(ev["limit_errors"])
    assert np.all(np.max(np.abs(u - lim), axis=1) <= err + 1e-9)


def test_multihead_too_few_clusters_predicted_is_caught():
    """The single-head example has two clusters of directions; demanding ≤ n/6 = 1 fails."""
    claim = load_claim(CLAIMS / "multi-head.toml")
    family = _family(claim, "single-head-explicit")
    inst = family.instance(0)
    ok = get_check(claim.check)(_request(claim, family, inst))
    assert ok.verdict is InstanceVerdict.HOLDS and ok.evidence["clusters"] == 2
    bad = get_check(claim.check)(_request(claim, family, inst, cluster_fraction="1/6"))
    assert bad.verdict is InstanceVerdict.VIOLATED, bad.reason
