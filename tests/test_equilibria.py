r"""Tests of verify.analysis.equilibria against closed forms.

Two tokens on the circle (``V = Q = K = I``, sphere normalisation), ``x_k = (cos θ_k, sin θ_k)``,
``φ = θ_1 − θ_2``. The sphere field is ``ẋ_1 = P_12 (x_2 − <x_2, x_1> x_1)`` (the ``x_1`` part of
the attention output is radial), so ``θ̇_1 = <ẋ_1, e_θ1> = P_12 sin(θ_2 − θ_1) = −p(φ) sin φ`` and
likewise ``θ̇_2 = p(φ) sin φ`` with ``p(φ) = e^{β cos φ} / (e^β + e^{β cos φ})`` (= P_12 = P_21).
At ``φ = π`` (antipodal) the Jacobian in ``(θ_1, θ_2)`` is ``p(π) [[1, −1], [−1, 1]]``:
eigenvalues ``2 p(π) = 2 e^{−β} / (e^β + e^{−β})`` (the relative angle, unstable) and 0 (common
rotation). At ``φ = 0`` (consensus) ``φ̇ ≈ −2 p(0) φ = −φ``: eigenvalues −1 and 0.
"""

import json
import math

import numpy as np
import pytest

from verify.analysis.equilibria import (
    NEAR_FRACTION,
    autonomous_field,
    classify_end_state,
    coordinate_basis,
    find_equilibrium,
    jacobian,
)
from verify.errors import InvalidArgument
from verify.flow.simulate import simulate
from verify.model import Instance, Model

I2 = [[1, 0], [0, 1]]
EPS = 1e-6


def circle(beta=1, **extra):
    return Model(V=I2, beta=beta, form=extra.pop("form", "x"), normalisation="sphere", **extra)


def saddle_rate(beta: float) -> float:
    return 2 * math.exp(-beta) / (math.exp(beta) + math.exp(-beta))


def angles(*thetas):
    return [[math.cos(t), math.sin(t)] for t in thetas]


@pytest.mark.parametrize("beta", ["1/2", 1, 2])
def test_antipodal_jacobian_matches_closed_form(beta):
    b = float(Model(V=I2, beta=beta).beta)
    inst = Instance(circle(beta), [[1, 0], [-1, 0]])
    x = inst.x0_float()
    assert np.max(np.abs(autonomous_field(inst)(x))) == 0.0           # an equilibrium
    B, text = coordinate_basis(inst, x)
    assert B.shape == (4, 2) and text == "tangent space of (S^1)^2"
    J, err = jacobian(inst, x, basis=B)
    # basis-free comparison: B J Bᵀ against E C Eᵀ, E = (e_θ1 ⊕ e_θ2) = ((0,1), (0,-1))
    E = np.array([[0, 0], [1, 0], [0, 0], [0, -1]], dtype=float)
    p = saddle_rate(b) / 2
    closed = E @ (p * np.array([[1.0, -1.0], [-1.0, 1.0]])) @ E.T
    actual_error = np.max(np.abs(B @ J @ B.T - closed))
    assert err < 1e-8
    assert actual_error <= err
    eig = np.sort(np.linalg.eigvals(J).real)
    assert abs(eig[1] - saddle_rate(b)) < 1e-8 and abs(eig[0]) < 1e-8


def test_newton_returns_to_the_antipodal_pair():
    inst = Instance(circle(), [[1, 0], [-1, 0]])
    x, residual, ok = find_equilibrium(inst, np.array(angles(0.01, math.pi - 0.02)))
    assert ok and residual < 1e-12
    assert abs(x[0] @ x[1] + 1) < 1e-12                              # antipodal again
    assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-15)    # on the circle


def test_perturbed_antipodal_pair_is_metastable_with_the_closed_form_rate():
    inst = Instance(circle(), angles(EPS, math.pi))
    traj = simulate(inst, 10, checkpoints=11)
    assert traj.symmetry is None
    end = classify_end_state(inst, traj)
    assert end.kind == "metastable", end.reason
    assert end.dimension == 2 and end.restricted_to == "tangent space of (S^1)^2"
    assert abs(end.unstable_rate - saddle_rate(1)) <= end.rate_error < 1e-8
    assert end.distance <= NEAR_FRACTION and end.time == 10.0
    assert abs(end.eigenvalues[1]) <= end.rate_error                 # the rotation: neutral


def test_exact_antipodal_pair_is_not_metastable_on_its_invariant_set():
    inst = Instance(circle(), [[1, 0], [-1, 0]])
    traj = simulate(inst, 10, checkpoints=11)
    assert traj.symmetry is not None and traj.symmetry["enforced"]
    end = classify_end_state(inst, traj)
    assert end.kind == "stable" and end.dimension == 0
    assert "fixed subspace" in end.restricted_to


def test_symmetry_restriction_keeps_genuine_and_drops_transverse_instabilities():
    # x_2 = −x_1 is kept by −I (with the swap): only the common rotation is allowed → neutral
    inst = Instance(circle(), [[math.cos(EPS), math.sin(EPS)], [-math.cos(EPS), -math.sin(EPS)]])
    kept = classify_end_state(inst, simulate(inst, 10, checkpoints=11))
    assert kept.kind == "stable" and kept.dimension == 1, kept.reason
    assert abs(kept.unstable_rate) <= kept.rate_error
    free = classify_end_state(inst, simulate(inst, 10, checkpoints=11, symmetry="off"))
    assert free.kind == "metastable" and free.dimension == 2
    # mirror symmetry diag(−1, 1) with the swap keeps the relative angle: still unstable
    inst = Instance(circle(), [[math.cos(EPS), math.sin(EPS)], [-math.cos(EPS), math.sin(EPS)]])
    mirror = classify_end_state(inst, simulate(inst, 10, checkpoints=11))
    assert mirror.kind == "metastable" and mirror.dimension == 1
    assert abs(mirror.unstable_rate - saddle_rate(1)) <= mirror.rate_error


def test_consensus_is_stable_with_rate_minus_one_and_a_neutral_rotation():
    inst = Instance(circle(beta=3), [[1, 0], [1, 0]])
    free = classify_end_state(inst, simulate(inst, 5, checkpoints=6, symmetry="off"))
    assert free.kind == "stable", free.reason
    low, high = sorted(z.real for z in free.eigenvalues)
    assert abs(low + 1) <= free.rate_error and abs(high) <= free.rate_error
    kept = classify_end_state(inst, simulate(inst, 5, checkpoints=6))
    assert kept.kind == "stable" and kept.dimension == 0
    # a nearby mirror-symmetric state: only the relative mode is allowed, rate −1
    inst = Instance(circle(), angles(0.3, -0.3))
    end = classify_end_state(inst, simulate(inst, 10, checkpoints=11))
    assert end.kind == "stable" and end.dimension == 1
    assert abs(end.unstable_rate + 1) <= end.rate_error


def test_rescaled_form_is_not_autonomous():
    inst = Instance(Model(V=I2), angles(0.1, 2.0))
    end = classify_end_state(inst, simulate(inst, 2, checkpoints=3))
    assert end.kind == "not-autonomous" and "depends on t" in end.reason
    with pytest.raises(InvalidArgument, match="form='z'"):
        autonomous_field(inst)


def test_linear_field_jacobian_is_exact():
    # β = 0: P = 11ᵀ/n, so f(X) = (11ᵀ/n) X Vᵀ and Df = (11ᵀ/n) ⊗ V on x.ravel()
    V = [[1, 2], [-3, "1/2"]]
    inst = Instance(Model(V=V, beta=0, form="x"), [[1, 0], [0, 1], [2, 3]])
    J, err = jacobian(inst, np.array([[0.3, -1.0], [2.0, 0.5], [-0.7, 0.1]]))
    closed = np.kron(np.ones((3, 3)) / 3, np.array([[1, 2], [-3, 0.5]]))
    assert err < 1e-9 and np.max(np.abs(J - closed)) <= err


def test_discrete_layers_use_the_layer_map():
    inst = Instance(circle(form="discrete", h="1/10"), angles(EPS, math.pi))
    end = classify_end_state(inst, simulate(inst, 10, checkpoints=11))
    assert end.kind == "metastable"
    mu = 1 + 0.1 * saddle_rate(1)                       # eigenvalue of I + hJ
    assert abs(end.eigenvalues[0] - mu) < 1e-8
    assert abs(end.unstable_rate - math.log(mu) / 0.1) <= end.rate_error


def test_blow_up_is_moving_and_dicts_are_json():
    inst = Instance(Model(V=I2, form="x"), [[1, 0], [0, 1], [0.5, 0.5]])
    end = classify_end_state(inst, simulate(inst, 5, checkpoints=6))
    assert end.kind == "moving" and end.speed > 1
    for state in (end, classify_end_state(Instance(circle(), [[1, 0], [-1, 0]]),
                                          simulate(Instance(circle(), [[1, 0], [-1, 0]]), 1))):
        json.dumps(state.to_dict(), allow_nan=False)


def test_hardmax_tie_makes_the_jacobian_error_large():
    # token 1 ties between itself and token 2 (<x1,x1> = <x1,x2> = 1): the field jumps
    inst = Instance(Model(V=I2, form="x", attention="hardmax"), [[1, 0], [1, 1]])
    _, err = jacobian(inst, inst.x0_float())
    assert err > 1e3
