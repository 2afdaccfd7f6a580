"""Tests of the counterexample shrinker (verify/search/_shrink.py) with cheap exact oracles."""

from __future__ import annotations

import time
import tomllib
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from verify.errors import InvalidArgument
from verify.model import Instance, Model
from verify.model.instance_file import instance_to_toml, load_instance_file, parse_instance
from verify.search import _shrink as shrinking
from verify.search._shrink import (
    DENOMINATORS,
    ShrinkResult,
    complexity,
    shrink,
    shrink_candidates,
)

HALF = Fraction(1, 2)


def big_coordinate(instance: Instance) -> bool:
    return bool((instance.x0 > HALF).any())


def exact_parts(instance: Instance) -> tuple:
    """Everything exact about an instance, as nested lists (for equality)."""
    model = instance.model
    mlp = model.mlp
    mask = model.mask if isinstance(model.mask, str) else model.mask.tolist()
    return (instance.x0.tolist(),
            [(h.V.tolist(), h.Q.tolist(), h.K.tolist()) for h in model.heads],
            model.beta, model.form, model.attention, mask, model.normalisation, model.h,
            None if mlp is None else (mlp.W.tolist(), mlp.activation,
                                      None if mlp.bias is None else mlp.bias.tolist()))


def options(instance: Instance) -> tuple:
    model = instance.model
    return (model.form, model.attention, model.normalisation, model.h,
            isinstance(model.mask, str) and model.mask,
            None if model.mlp is None else (model.mlp.activation, model.mlp.bias is None))


def check_chain(result: ShrinkResult, fails) -> None:
    """Complexity strictly decreases along the chain; every accepted instance fails."""
    assert result.chain[-1] is result.instance
    assert len(result.chain) == len(result.moves) + 1
    sizes = [complexity(inst) for inst in result.chain]
    for before, after in zip(sizes, sizes[1:], strict=False):
        assert after < before
    for inst in result.chain[1:]:
        assert fails(inst)
        assert options(inst) == options(result.chain[0])
        assert inst.name == result.chain[0].name
    assert result.evaluations == len(result.moves) + result.rejected


@pytest.fixture
def messy() -> Instance:
    x0 = [["0.13", "-0.41", "1/3"], ["0.2", "0.05", "-0.3"], ["0.11", "0.73", "-2/7"],
          ["-0.49", "0.31", "0.07"], ["3/11", "-0.22", "0.4"]]
    V = [["1/3", "0.2", 0], ["-1/7", 2, "0.5"], [0, "1/9", "-1.25"]]
    Q = [["0.3", 1, 0], [0, "2/3", "0.1"]]          # rectangular: k = 2, d = 3
    K = [[1, "-0.7", "1/5"], ["0.4", 0, 1]]
    return Instance(Model(V, Q, K, beta="1.7"), x0, name="messy")


def test_threshold_oracle_shrinks_to_one_token_one_coordinate(messy):
    result = shrink(messy, big_coordinate)
    check_chain(result, big_coordinate)
    final = result.instance
    assert result.stopped == "minimal"
    assert (final.n, final.d) == (1, 1)
    assert final.x0.tolist() == [[Fraction(1)]]                 # 0.73 rounded to 1
    assert final.model.V.tolist() == [[Fraction(1)]]
    assert final.model.Q.tolist() == [[Fraction(1)]] == final.model.K.tolist()
    assert final.model.beta == 1
    assert complexity(final) == (1, 1, 1, 5.0)
    # minimal: no candidate of the result fails
    assert not any(big_coordinate(c) for _, c in shrink_candidates(final))


def test_count_oracle_stops_at_exactly_three_tokens(messy):
    def fails(inst):
        return inst.n >= 3

    result = shrink(messy, fails)
    check_chain(result, fails)
    assert result.instance.n == 3 and result.instance.d == 1
    assert result.stopped == "minimal"
    assert result.moves[0] == "drop tokens 1-2"                 # a block before single tokens


def test_every_candidate_is_smaller_valid_and_keeps_options(messy):
    base = complexity(messy)
    seen = []
    for description, candidate in shrink_candidates(messy):
        seen.append(description)
        size = complexity(candidate)
        assert size[:3] < base[:3] or (size[:3] == base[:3] and size[3] < base[3])
        assert options(candidate) == options(messy) and candidate.name == "messy"
    assert len(seen) == len(set(seen))
    assert "drop row 1 of Q and K" in seen and "V -> I" in seen and "beta -> 1" in seen
    for D in DENOMINATORS[:-1]:
        assert f"round x0 (denominators <= {D})" in seen
    # every denominator of x0 (100, 3, 20, 7, 11, ...) is <= 100: that rounding changes nothing
    assert "round x0 (denominators <= 100)" not in seen


def test_rectangular_qk_reparametrised_with_the_same_bilinear_form():
    Q = [["1/2", 0], ["1/2", 0], [0, 1]]                   # k = 3 > d = 2
    K = [[3, 0], [1, 0], [0, 2]]                           # QᵀK = 2 I
    inst = Instance(Model([[1, 0], [0, 1]], Q, K), [[1, 0], [0, 1]], name="qk")
    moved = dict(shrink_candidates(inst))["Q, K -> I, QᵀK"]
    assert moved.model.Q.tolist() == [[1, 0], [0, 1]] and moved.model.B.tolist() == [[2, 0],
                                                                                     [0, 2]]

    def fails(c):
        return c.n == 2 and c.model.B.tolist() == [[2, 0], [0, 2]]

    result = shrink(inst, fails)
    check_chain(result, fails)
    assert "Q, K -> I, QᵀK" in result.moves
    assert result.instance.model.Q.shape == (2, 2)


def test_dropping_a_coordinate_of_rectangular_qk(messy):
    head = messy.model.heads[0]
    dropped = dict(shrink_candidates(messy))["drop coordinate 2"]
    assert dropped.model.Q.shape == (2, 2) and dropped.model.V.shape == (2, 2)
    assert dropped.model.Q.tolist() == head.Q[:, [0, 2]].tolist()
    assert dropped.model.V.tolist() == head.V[np.ix_([0, 2], [0, 2])].tolist()


def test_sphere_tokens_stay_exactly_on_the_sphere():
    x0 = [[np.cos(0.3), np.sin(0.3), 0.0], ["-2/7", "3/7", "6/7"],
          ["2/3", "2/3", "1/3"], ["0.6", 0, "0.8"]]
    model = Model(V=[[1, 0, "0.5"], [0, "-1", 0], [0, 0, "0.25"]], form="x",
                  normalisation="sphere", mask="causal")
    inst = Instance(model, x0, name="sphere")
    candidates = list(shrink_candidates(inst))
    assert any(text.startswith("drop coordinate") for text, _ in candidates)
    for _, cand in candidates:
        for row in cand.x0:                                 # exactly unit, or untouched floats
            assert sum(f * f for f in row) == 1 or row.tolist() == inst.x0[0].tolist()
    rounded = dict(candidates)["round x0 (denominators <= 100)"].x0
    assert sum(f * f for f in rounded[0]) == 1 and max(abs(rounded[0] - inst.x0[0])) < 1e-3
    exact = dict(candidates)["drop coordinate 3"].x0
    # |(2/3, 2/3)| is irrational: the token goes to a rational point of the circle near it
    assert np.allclose([float(f) for f in exact[2]], [2 ** -0.5] * 2, atol=1e-5)
    # |(0.6, 0)| = 0.6 is rational: that token is normalised exactly to (1, 0)
    assert exact[3].tolist() == [1, 0]

    def fails(c):
        return c.n >= 2 and c.d >= 2

    result = shrink(inst, fails)
    check_chain(result, fails)
    final = result.instance
    assert (final.n, final.d) == (2, 2)
    assert final.model.mask == "causal" and final.model.normalisation == "sphere"
    assert all(f in (-1, 0, 1) for f in final.x0.flat)          # simplest points of the circle


def test_adjacency_mask_loses_the_rows_and_columns_of_dropped_tokens():
    adjacency = [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 1, 0, 0]]
    inst = Instance(Model(V=[[1]], mask=adjacency, form="x"), [[1], [2], [3], [4]], name="adj")
    texts = [text for text, _ in shrink_candidates(inst)]
    # token 3 attends only to token 1: dropping token 1 would leave it without neighbours
    assert "drop token 2" not in texts and "drop tokens 1-2" not in texts
    assert "drop token 1" in texts

    def fails(c):
        return {Fraction(1), Fraction(3)} <= set(c.x0.flat)

    result = shrink(inst, fails)
    check_chain(result, fails)
    assert result.instance.x0.tolist() == [[1], [3]]
    assert result.instance.model.mask.tolist() == [[True, False], [False, True]]


def test_several_heads_and_mlp_survive():
    heads = [{"V": [["0.5", 1], [0, "1/3"]], "Q": [[1, "0.2"], [0, 1]]},
             {"V": [[-1, 0], ["0.3", 2]], "K": [["1.5", 0], [0, "0.7"]]}]
    mlp = {"W": [["0.9", "0.1"], [0, "1.1"]], "activation": "tanh", "bias": ["0.3", "-0.2"]}
    model = Model(heads=heads, mlp=mlp, form="x", normalisation="pre-ln", attention="hardmax")
    inst = Instance(model, [["0.3", 1], [0, "0.7"], ["-1", "0.2"]], name="multi")
    texts = [text for text, _ in shrink_candidates(inst)]
    # pre-ln divides by |x|: dropping coordinate 1 puts token 1 at the origin, so it is skipped
    assert "drop coordinate 2" not in texts and "drop coordinate 1" in texts
    assert {"drop head 1", "drop head 2", "mlp.W -> I", "mlp.bias -> 0"} <= set(texts)

    def fails(c):
        return len(c.model.heads) == 2 and c.model.mlp.bias[0] != 0

    result = shrink(inst, fails)
    check_chain(result, fails)
    final = result.instance.model
    assert (result.instance.n, final.d, len(final.heads)) == (1, 1, 2)
    assert final.mlp.activation == "tanh" and final.mlp.W.tolist() == [[1]]
    assert final.mlp.bias[0] != 0 and final.mlp.bias[0].denominator <= 4   # -0.2 -> -1/4
    assert final.attention == "hardmax" and final.normalisation == "pre-ln"


def test_discrete_form_skips_moves_that_make_i_plus_hv_singular():
    V = [[-2, "1/3"], ["1/5", 1]]                          # I + V/2 = [[0, 1/6], [1/10, 3/2]]
    inst = Instance(Model(V=V, form="discrete", h="1/2"), [[1, "0.3"], ["0.2", -1]], name="d")
    texts = [text for text, _ in shrink_candidates(inst)]
    assert "V -> diag(V)" not in texts                     # diag(-2, 1): I + hV singular
    assert "drop coordinate 2" not in texts                # V = [[-2]]: singular
    assert "drop coordinate 1" in texts and "V -> I" in texts
    result = shrink(inst, lambda c: True)
    check_chain(result, lambda c: True)
    assert result.instance.model.form == "discrete" and result.instance.model.h == HALF
    assert (result.instance.n, result.instance.d) == (1, 1)


def test_budgets_stop_the_search(messy, monkeypatch):
    result = shrink(messy, big_coordinate, max_evaluations=3)
    assert result.evaluations == 3 and result.stopped == "budget"
    check_chain(result, big_coordinate)

    result = shrink(messy, big_coordinate, deadline=time.monotonic() - 1)
    assert result.evaluations == 0 and result.stopped == "budget"
    assert result.instance is messy and result.moves == []

    # A clock of our own (no wall-clock threshold): each evaluation takes 1/32 "second" (exact
    # in binary), so a deadline 1/8 after the start allows exactly 4 evaluations.
    clock = [1000.0]
    monkeypatch.setattr(shrinking.time, "monotonic", lambda: clock[0])

    def slow(inst):
        clock[0] += 1 / 32
        return big_coordinate(inst)

    result = shrink(messy, slow, deadline=clock[0] + 1 / 8)
    assert result.stopped == "budget" and result.evaluations == 4


def test_oracle_exceptions_count_as_not_failing(messy):
    def fragile(inst):
        if inst.n < 3:
            raise RuntimeError("simulation blew up")
        return True

    result = shrink(messy, fragile)
    assert result.instance.n == 3 and result.errors > 0
    assert result.errors <= result.rejected and result.stopped == "minimal"


@pytest.mark.parametrize("kwargs, field", [
    ({"fails": 3}, "fails=3"),
    ({"fails": big_coordinate, "max_evaluations": -1}, "max_evaluations=-1"),
    ({"fails": big_coordinate, "max_evaluations": 2.5}, "max_evaluations=2.5"),
    ({"fails": big_coordinate, "deadline": "soon"}, "deadline='soon'"),
])
def test_bad_arguments(messy, kwargs, field):
    with pytest.raises(InvalidArgument, match=field):
        shrink(messy, **kwargs)


def test_shrunk_instance_round_trips_exactly(tmp_path):
    adjacency = [[1, 0, 1], [1, 1, 0], [0, 1, 1]]
    heads = [{"V": [["0.5", "1/3"], [0, 1]]}, {"V": [[1, 0], [0, 1]], "Q": [["2/3", 0]],
                                               "K": [["0.1", 1]]}]
    model = Model(heads=heads, form="discrete", h="0.1", mask=adjacency, normalisation="sphere",
                  beta="2.5", mlp={"W": [[1, "0.5"], [0, 1]], "bias": ["0.25", 0]})
    inst = Instance(model, [["0.6", "0.8"], [1, 0], ["-0.8", "0.6"]], name="rich")

    def fails(c):
        return c.n >= 2 and c.d == 2 and len(c.model.heads) == 2 and c.model.beta > 1

    result = shrink(inst, fails)
    check_chain(result, fails)
    assert result.instance.n == 2 and result.moves
    text = instance_to_toml(result.instance)
    back = parse_instance(tomllib.loads(text, parse_float=Decimal), "shrunk.toml").instance
    assert exact_parts(back) == exact_parts(result.instance)
    assert complexity(back) == complexity(result.instance) and back.name == "rich"
    path = tmp_path / "shrunk.toml"
    path.write_text(text)
    again = load_instance_file(path).instance
    assert exact_parts(again) == exact_parts(result.instance) and fails(again)


def test_real_oracle_norm_growth_in_the_x_form():
    """A tiny real oracle: 'the largest |x_i| does not grow on [0, 1]' fails when V has a
    positive direction; judged from a simulation with its error bar (violation only when the
    growth exceeds the error)."""
    from verify.flow.simulate import simulate

    def grows(inst):
        traj = simulate(inst, 1, checkpoints=2, precision="float64")
        growth = np.abs(traj.x[-1]).max() - np.abs(inst.x0_float()).max()
        return bool(traj.success and growth > traj.error[-1].max() + 1e-12)

    V = [["1/3", 0], ["1/7", "-1/2"]]
    inst = Instance(Model(V=V, form="x"), [["0.3", "-0.2"], ["-0.71", "0.1"], ["1.2", "0.4"]],
                    name="growth")
    assert grows(inst)
    result = shrink(inst, grows)
    check_chain(result, grows)
    final = result.instance
    assert (final.n, final.d) == (1, 1) and result.stopped == "minimal"
    assert final.model.V.tolist() == [[1]] and final.x0.tolist() == [[1]]
