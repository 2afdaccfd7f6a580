"""Bad inputs to the model and to instance files: each gives its own clear error."""

import math
import tomllib
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array, to_rational
from verify.model import Instance, Model
from verify.model.instance_file import instance_to_toml, load_instance_file, parse_instance


def test_exact_conversions_are_recorded():
    assert to_rational("0.64709742") == (Fraction(64709742, 10**8), "decimal-string")
    assert to_rational(0.1)[0] == Fraction(3602879701896397, 2**55)
    assert to_rational(Decimal("0.1")) == (Fraction(1, 10), "decimal")
    _, kind = rational_array("V", [[1, "1/2"], [0.5, 2]])
    assert kind == "integer+fraction-string+float-binary"
    model = Model(V=[["0.5", 0], [0, 1]])
    assert model.conversions["V"] == "integer+decimal-string"


def test_non_square_V():
    with pytest.raises(InvalidArgument, match=r"V square.*shape=\(2, 3\)"):
        Model(V=[[1, 0, 0], [0, 1, 0]])


@pytest.mark.parametrize("bad", [math.nan, math.inf, "nan", "abc"])
def test_nan_inf_and_garbage_entries(bad):
    with pytest.raises(InvalidArgument, match=r"V\[0, 1\]"):
        Model(V=[[1, bad], [0, 1]])


def test_Q_K_shapes():
    with pytest.raises(InvalidArgument, match="columns"):
        Model(V=[[1, 0], [0, 1]], Q=[[1, 0, 0]])
    with pytest.raises(InvalidArgument, match="same number of rows"):
        Model(V=[[1, 0], [0, 1]], Q=[[1, 0]], K=[[1, 0], [0, 1]])
    rectangular = Model(V=[[1, 0], [0, 1]], Q=[[1, 0]], K=[[0, 1]])  # k = 1 < d = 2 is allowed
    assert rectangular.B.tolist() == [[0, 1], [0, 0]]


def test_tokens_shape_and_values():
    model = Model(V=[[1, 0], [0, 1]])
    with pytest.raises(InvalidArgument, match=r"x0 of shape \(n, 2\)"):
        Instance(model, [[1, 2, 3]])
    with pytest.raises(InvalidArgument, match=r"x0\[1, 0\]=nan"):
        Instance(model, [[1, 2], [math.nan, 0]])
    with pytest.raises(InvalidArgument, match="rectangular"):
        Instance(model, [[1, 2], [3]])


def test_singular_discrete_rescaling():
    with pytest.raises(InvalidArgument, match=r"I \+ hV is singular"):
        Model(V=[[-2, 0], [0, 1]], form="discrete", h="1/2")
    with pytest.raises(InvalidArgument, match="needs the step h"):
        Model(V=[[1]], form="discrete")
    with pytest.raises(InvalidArgument, match="only used with form='discrete'"):
        Model(V=[[1]], h="0.1")


@pytest.mark.parametrize("key, value", [("form", "y"), ("attention", "sparsemax"),
                                        ("normalisation", "batch"), ("mask", "banded")])
def test_unknown_variant(key, value):
    with pytest.raises(InvalidArgument, match=f"Unknown {key}='{value}'"):
        Model(V=[[1]], **{key: value})


def test_rescaled_form_rejects_variants_without_it():
    with pytest.raises(InvalidArgument, match="several heads"):
        Model(heads=[{"V": [[1]]}, {"V": [[2]]}], form="z")
    with pytest.raises(InvalidArgument, match="normalisation='sphere'"):
        Model(V=[[1, 0], [0, 1]], normalisation="sphere")


def test_masks():
    with pytest.raises(InvalidArgument, match="row 1 has no 1"):
        Model(V=[[1]], mask=[[1, 0], [0, 0]])
    model = Model(V=[[1]], mask=[[1, 0], [1, 1]])
    with pytest.raises(InvalidArgument, match="n=3 tokens"):
        Instance(model, [[1], [2], [3]])
    assert Model(V=[[1]], mask="causal").mask_for(3).tolist() == [
        [True, False, False], [True, True, False], [True, True, True]]


def test_sphere_tokens_must_be_unit():
    model = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere")
    with pytest.raises(InvalidArgument, match="unit sphere"):
        Instance(model, [[2, 0], [0, 1]])
    with pytest.raises(InvalidArgument, match="token 0 is 0"):
        Instance(model, [[0, 0], [0, 1]])


def test_mlp_and_heads_validation():
    with pytest.raises(InvalidArgument, match=r"mlp.W of shape \(2, 2\)"):
        Model(V=[[1, 0], [0, 1]], mlp={"W": [[1]]})
    with pytest.raises(InvalidArgument, match="Unknown mlp.activation='gelu'"):
        Model(V=[[1, 0], [0, 1]], mlp={"W": [[1, 0], [0, 1]], "activation": "gelu"})
    with pytest.raises(InvalidArgument, match="same dimension"):
        Model(heads=[{"V": [[1]]}, {"V": [[1, 0], [0, 1]]}], form="x")


def _parse(text: str):
    return parse_instance(tomllib.loads(text, parse_float=Decimal), "bad.toml")


def test_instance_file_typo_names_file_and_field():
    with pytest.raises(InvalidArgument, match=r"bad.toml: unknown field model.'Vv'.*'V'"):
        _parse("[model]\nVv = [[1]]\n[tokens]\nx0 = [[1]]\n")
    with pytest.raises(InvalidArgument, match=r"simulation.'horizn'.*'horizon'"):
        _parse("[model]\nV = [[1]]\n[tokens]\nx0 = [[1]]\n[simulation]\nhorizn = 3\n")
    with pytest.raises(InvalidArgument, match=r"bad.toml: missing table \[tokens\]"):
        _parse("[model]\nV = [[1]]\n")
    with pytest.raises(InvalidArgument, match=r"bad.toml: \[model\]: Expected V square"):
        _parse("[model]\nV = [[1, 2]]\n[tokens]\nx0 = [[1]]\n")


def test_instance_file_not_toml(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[model\nV = ")
    with pytest.raises(InvalidArgument, match="not valid TOML"):
        load_instance_file(path)
    with pytest.raises(InvalidArgument, match="Cannot read"):
        load_instance_file(tmp_path / "missing.toml")


def test_instance_file_round_trip_is_exact(tmp_path):
    model = Model(V=[["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]], beta="3/2",
                  form="x", attention="hardmax", mask=[[1, 0], [1, 1]])
    inst = Instance(model, [[0.1, "1/3"], [-2, 5]], name="round-trip")
    path = tmp_path / "inst.toml"
    path.write_text(instance_to_toml(inst, {"horizon": "5"}))
    again = load_instance_file(path).instance
    assert np.array_equal(again.x0, inst.x0) and np.array_equal(again.model.V, model.V)
    assert again.model.beta == Fraction(3, 2) and again.model.describe() == model.describe()


def test_a_relu_mlp_makes_the_field_kinked_and_tanh_does_not():
    V = [[1, 0], [0, 1]]
    assert Model(V=V, mlp={"W": V, "activation": "relu"}).field_has_kinks
    assert not Model(V=V, mlp={"W": V, "activation": "tanh"}).field_has_kinks
    assert not Model(V=V, mlp={"W": V, "activation": "identity"}).field_has_kinks
    assert not Model(V=V).field_has_kinks
