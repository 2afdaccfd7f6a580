"""Parsing and validation of the ``[[families]]`` tables of a claim file.

Errors name the file and the field as ``families[i].<key>`` (0-based), with a "did you mean" for
unknown keys and generator names; see ``claims/_format.md`` for the format and
:mod:`verify.claim._family` for the :class:`~verify.claim.Family` it builds.

Examples
--------
>>> try:
...     parse_family({"name": "bad", "kind": "random", "count": 2, "seed": 0, "n": 4, "d": 2,
...                   "V": "symetric-MMt", "tokens": "uniform", "horizon": 1}, 1, "f.toml")
... except InvalidArgument as exc:
...     print(str(exc).split(" Known")[0])
f.toml: families[1].V: unknown V generator 'symetric-MMt'. Did you mean 'symmetric-MMt'?
"""

from __future__ import annotations

import numpy as np

from verify.claim._family import Family, GeneratorSpec, Matrix, _identity
from verify.claim._family_fields import NAME_RE, _check_keys, _checkpoints, _int, _number
from verify.claim._family_weights import parse_weights_family
from verify.claim._generators import QK_GENERATORS, TOKEN_DISTRIBUTIONS, V_GENERATORS, Generator
from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array
from verify.exact.plain import fail, suggest
from verify.exact.reals import normalise_rows
from verify.model import BOUNDED_SCORES, Model
from verify.model.resources import (
    check_digits,
    check_growth,
    check_horizon,
    check_instances,
    check_memory,
)

__all__ = ["parse_family", "FAMILY_KEYS", "MODEL_KEYS", "MLP_KEYS"]

FAMILY_KEYS = ("name", "kind", "description", "count", "seed", "n", "d", "V", "Q", "K", "QK",
               "x0", "normalise", "tokens", "heads", "model", "horizon", "checkpoints",
               "precision")
MODEL_KEYS = ("beta", "form", "attention", "mask", "normalisation", "h", "mlp")
MLP_KEYS = ("W", "activation", "bias")


def _matrix(value, where, source, *, square: bool = False, ndim: int = 2) -> Matrix:
    try:
        array, _ = rational_array(where, value, ndim=ndim)
    except InvalidArgument as exc:  # the message already names the entry, e.g. "V[0, 1]=NaN"
        fail(source, "" if str(exc).startswith(where) else where, str(exc))
    if ndim == 2 and 0 in array.shape:
        fail(source, where, f"is empty (shape {array.shape}); give at least one row and column.")
    if square and array.shape[0] != array.shape[1]:
        fail(source, where, f"must be square (d×d) but has shape {array.shape}.")
    if ndim == 1:
        return tuple(array.tolist())
    return tuple(tuple(row) for row in array.tolist())


def _normalise(flag, tokens: Matrix, where: str, source: str) -> Matrix:
    """``tokens`` with every row divided by its norm, exactly, when ``flag`` is true."""

    if not isinstance(flag, bool):
        fail(source, where, f"{flag!r} must be true or false.")
    if not flag:
        return tokens
    try:
        return tuple(tuple(row) for row in normalise_rows(tokens))
    except ValueError as exc:
        fail(source, where, f"{exc}.")


def _generator(value, registry: dict, what: str, where: str, source: str) -> GeneratorSpec:
    key = "distribution" if registry is TOKEN_DISTRIBUTIONS else "generator"
    if isinstance(value, str):
        name, given = value, {}
    elif isinstance(value, dict):
        given = dict(value)
        name = given.pop(key, None)
        if name is None:
            fail(source, where, f"a table needs the key {key!r} naming the {what}.")
    else:
        fail(source, where, f"{value!r} must be a matrix, a {what} name or a table "
             f"{{{key} = \"...\", ...}}.")
    if name not in registry:
        fail(source, where, f"unknown {what} {name!r}.{suggest(name, registry)} Known: "
             f"{', '.join(registry)}.")
    gen: Generator = registry[name]
    params = {}
    for param in given:
        if param not in gen.params:
            fail(source, f"{where}.{param}", f"unknown parameter {param!r} of {what} {name!r}."
                 f"{suggest(param, gen.params)} Known: {', '.join(gen.params) or 'none'}.")
    for param, (kind, default) in gen.params.items():
        value = given.get(param, default)
        if value is None or param not in given:
            params[param] = value
        elif kind == "number":
            params[param] = _number(value, f"{where}.{param}", source)
        elif kind == "int":
            params[param] = _int(value, f"{where}.{param}", source, -2**62)
        elif kind in ("matrix", "rows"):
            params[param] = _number_rows(value, f"{where}.{param}", source, kind == "matrix")
        elif kind == "numbers":
            if not isinstance(value, list) or not value:
                fail(source, f"{where}.{param}", f"{value!r} must be a non-empty list of numbers.")
            params[param] = [_number(v, f"{where}.{param}[{i}]", source)
                             for i, v in enumerate(value)]
        elif not isinstance(value, bool):
            fail(source, f"{where}.{param}", f"{value!r} must be true or false.")
        else:
            params[param] = value
    return GeneratorSpec(name, params)


def _number_rows(value, where: str, source: str, square: bool) -> tuple:
    """Rows of exact numbers, all of one length (``square``: as many rows as columns)."""
    if not isinstance(value, list) or not value or not all(
            isinstance(row, list) and row and len(row) == (len(value) if square else
                                                           len(value[0])) for row in value):
        fail(source, where, f"{value!r} must be " + ("a square matrix (a list of rows of equal "
                                                     "length)." if square else "a list of rows "
                                                     "of equal length (one row per token)."))
    return tuple(tuple(_number(v, f"{where}[{i}][{j}]", source) for j, v in enumerate(row))
                 for i, row in enumerate(value))


def _requires(registry, spec, n, d, where, source) -> None:
    if isinstance(spec, GeneratorSpec) and registry[spec.name].requires is not None:
        problem = registry[spec.name].requires(n, d, spec.params)
        if problem:
            fail(source, where, f"{spec.name!r} {problem}.")


def parse_family(table: dict, index: int, source: str) -> Family:
    """Validate one ``[[families]]`` table; errors name ``families[index].<field>``."""
    here = f"families[{index}]"
    if not isinstance(table, dict):
        fail(source, here, "must be a table ([[families]]).")
    if table.get("kind") == "weights":  # real Transformer heads: verify.claim._family_weights
        return parse_weights_family(table, index, source)
    _check_keys(table, FAMILY_KEYS, here, source)
    for key in ("name", "kind", "V", "horizon"):
        if key not in table:
            fail(source, f"{here}.{key}", "missing (required).")
    name = table["name"]
    if not isinstance(name, str) or not NAME_RE.match(name):
        fail(source, f"{here}.name", f"{name!r} must be kebab-case (e.g. 'uniform-2d').")
    kind = table["kind"]
    if kind not in ("random", "explicit"):
        fail(source, f"{here}.kind", f"{kind!r} must be 'random', 'explicit' or 'weights'."
             f"{suggest(kind, ('random', 'explicit', 'weights'))}")
    dims: dict[str, int] = {}

    def spec_or_matrix(key, registry, what, square=False):
        value = table[key]
        if isinstance(value, list):
            matrix = _matrix(value, f"{here}.{key}", source, square=square)
            dims[key] = len(matrix[0])
            return matrix
        return _generator(value, registry, what, f"{here}.{key}", source)

    V = spec_or_matrix("V", V_GENERATORS, "V generator", square=True)
    Q = _matrix(table["Q"], f"{here}.Q", source) if "Q" in table else None
    K = _matrix(table["K"], f"{here}.K", source) if "K" in table else None
    QK = None
    if "QK" in table:
        if Q is not None or K is not None:
            fail(source, f"{here}.QK", "give either QK (a generator) or Q and K, not both.")
        QK = _generator(table["QK"], QK_GENERATORS, "QK generator", f"{here}.QK", source)
    for key, m in (("Q", Q), ("K", K)):
        if m is not None:
            dims[key] = len(m[0])
    if Q is not None and K is not None and len(Q) != len(K):
        fail(source, f"{here}.K", f"Q has {len(Q)} rows and K has {len(K)}; <Qx, Ky> needs the "
             "same number of rows k.")
    if ("x0" in table) == ("tokens" in table):
        fail(source, f"{here}.x0", "give exactly one of x0 (explicit tokens) or tokens (a "
             "distribution).")
    if "x0" in table:
        tokens = _matrix(table["x0"], f"{here}.x0", source)
        dims["x0"] = len(tokens[0])
        if "normalise" in table:
            tokens = _normalise(table["normalise"], tokens, f"{here}.normalise", source)
    elif "normalise" in table:
        fail(source, f"{here}.normalise", "normalises explicit tokens x0 only (a distribution "
             "says itself whether its points are on the sphere).")
    else:
        if not isinstance(table["tokens"], (str, dict)):
            fail(source, f"{here}.tokens", "must be a distribution name or a table "
                 "{distribution = \"...\", ...}; explicit tokens go in x0.")
        tokens = _generator(table["tokens"], TOKEN_DISTRIBUTIONS, "token distribution",
                            f"{here}.tokens", source)
    if "d" in table:
        dims["d"] = _int(table["d"], f"{here}.d", source, 1)
    if len(set(dims.values())) > 1:
        shown = ", ".join(f"{k} → d = {v}" for k, v in dims.items())
        fail(source, f"{here}.d", f"inconsistent token dimensions: {shown}.")
    if not dims:
        fail(source, f"{here}.d", "missing: give d (the token dimension), since no matrix fixes "
             "it.")
    d = next(iter(dims.values()))
    if (Q is None) != (K is None) and len(Q or K) != d:
        key = "Q" if Q is not None else "K"
        fail(source, f"{here}.{key}", f"has {len(Q or K)} rows but the other factor defaults to "
             f"I_{d}; give both Q and K (k×d each).")
    if isinstance(tokens, GeneratorSpec):
        if "n" not in table:
            fail(source, f"{here}.n", "missing: give n (the number of tokens) for random tokens.")
        n = _int(table["n"], f"{here}.n", source, 1)
    else:
        n = len(tokens)
        if "n" in table and table["n"] != n:
            fail(source, f"{here}.n", f"n = {table['n']!r} but x0 has {n} rows.")
    precision = _precision(table.get("precision", "float64"), f"{here}.precision", source)
    check_memory(n, d, precision, f"{source}: {here} (family {name!r})")  # before n², d² work
    _requires(V_GENERATORS, V, n, d, f"{here}.V", source)
    _requires(QK_GENERATORS, QK, n, d, f"{here}.QK", source)
    _requires(TOKEN_DISTRIBUTIONS, tokens, n, d, f"{here}.tokens", source)
    heads = _int(table.get("heads", 1), f"{here}.heads", source, 1)
    model = _model_options(table.get("model", {}), d, n, heads, f"{here}.model", source)
    random = any(isinstance(s, GeneratorSpec) and registry[s.name].draws(s.params)
                 for s, registry in ((V, V_GENERATORS), (QK, QK_GENERATORS),
                                     (tokens, TOKEN_DISTRIBUTIONS))) or \
        (model.get("mlp") or {}).get("W") == "random"
    if kind == "explicit":
        if random:
            fail(source, f"{here}.kind", "'explicit' but some ingredient is drawn at random; "
                 "use kind = 'random' with count and seed.")
        if "seed" in table:
            fail(source, f"{here}.seed", "an explicit family draws nothing; remove seed.")
        count = _int(table.get("count", 1), f"{here}.count", source, 1)
        if count != 1 or heads != 1:
            fail(source, f"{here}.{'count' if count != 1 else 'heads'}",
                 "an explicit family has one instance and one head.")
        seed = None
    else:
        if not random:
            fail(source, f"{here}.kind", "'random' but nothing is drawn at random; use kind = "
                 "'explicit' (one instance).")
        for key in ("count", "seed"):
            if key not in table:
                fail(source, f"{here}.{key}", "missing (required for a random family).")
        count = _int(table["count"], f"{here}.count", source, 1)
        check_instances(count, f"{source}: {here}.count")
        seed = _int(table["seed"], f"{here}.seed", source, 0)
    horizon = _number(table["horizon"], f"{here}.horizon", source)
    if horizon <= 0:
        fail(source, f"{here}.horizon", f"{horizon} must be positive.")
    bounded = model.get("normalisation") in BOUNDED_SCORES
    check_horizon(horizon, f"{source}: {here}.horizon", bounded=bounded)
    if not isinstance(V, GeneratorSpec) and not bounded:
        check_growth(V, horizon, precision, f"{source}: {here} (family {name!r})")
    checkpoints = _checkpoints(table.get("checkpoints"), horizon, f"{here}.checkpoints", source)
    description = table.get("description", "")
    if not isinstance(description, str):
        fail(source, f"{here}.description", "must be a string.")
    family = Family(name, kind, count, seed, d, n, V, Q, K, QK, tokens, heads, model, horizon,
                    checkpoints, precision, description.strip())
    if kind == "explicit":
        try:
            family.instance(0)
        except InvalidArgument as exc:
            fail(source, here, str(exc))
    return family


def _precision(value, where: str, source: str):
    """``"float64"``, ``"auto"`` or digits in ``[16, MAX_DIGITS]`` (:func:`check_digits`)."""
    try:
        check_digits(value, "precision")
    except InvalidArgument as exc:
        fail(source, where, str(exc).removeprefix("precision="))
    return value


def _model_options(table, d: int, n: int, heads: int, where: str, source: str) -> dict:
    if not isinstance(table, dict):
        fail(source, where, "must be a table of model options.")
    _check_keys(table, MODEL_KEYS, where, source)
    options = dict(table)
    for key in ("beta", "h"):
        if key in options:
            options[key] = _number(options[key], f"{where}.{key}", source)
    if isinstance(options.get("mask"), list):
        options["mask"] = tuple(tuple(int(v) for v in row) for row in _matrix(
            options["mask"], f"{where}.mask", source))
    if "mlp" in options:
        mlp = options["mlp"]
        if not isinstance(mlp, dict) or "W" not in mlp:
            fail(source, f"{where}.mlp", "must be a table with W (a matrix, 'identity' or "
                 "'random'), activation and optional bias.")
        _check_keys(mlp, MLP_KEYS, f"{where}.mlp", source)
        mlp = dict(mlp)
        if isinstance(mlp["W"], list):
            mlp["W"] = _matrix(mlp["W"], f"{where}.mlp.W", source, square=True)
        elif mlp["W"] not in ("identity", "random"):
            fail(source, f"{where}.mlp.W", f"{mlp['W']!r} must be a matrix, 'identity' or "
                 "'random' (entries uniform in [-1, 1]).")
        if mlp.get("bias") is not None:
            mlp["bias"] = _matrix(mlp["bias"], f"{where}.mlp.bias", source, ndim=1)
        options["mlp"] = mlp
    probe = dict(options)
    if probe.get("mlp") is not None:
        probe["mlp"] = {"W": _identity(d), "activation": probe["mlp"].get("activation", "relu")}
    if isinstance(probe.get("mask"), tuple):
        probe["mask"] = np.array(probe["mask"])
    if heads > 1:
        probe["heads"] = [{"V": _identity(d)}] * heads
    else:
        probe["V"] = _identity(d)
    try:  # validate the variant once with V = I (the real V is checked per instance)
        Model(**probe).mask_for(n)
    except (InvalidArgument, TypeError) as exc:
        fail(source, where, str(exc))
    return options
