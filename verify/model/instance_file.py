"""Instance files: a model, its initial tokens and the simulation settings, in TOML.

Numbers are read exactly: TOML floats are parsed as decimals (``0.64709742`` means
``64709742/10^8``, not the nearest double), strings may hold decimals or fractions (``"1/3"``).

.. code-block:: toml

    name = "polytope-2d"
    description = "V = Q = K = I: tokens converge to the vertices of a polytope (Theorem 3.1)."

    [model]
    V = [[1, 0], [0, 1]]          # Q, K default to the identity; beta to 1
    form = "z"                    # "x", "z" or "discrete" (then h = ...)
    attention = "softmax"         # "hardmax", "unnormalised"
    mask = "full"                 # "causal" or an n×n 0/1 list
    normalisation = "none"        # "sphere", "pre-ln"

    [tokens]
    x0 = [[1, 0], [0, 1], ["1/2", "1/2"]]   # entries may be exact expressions: "cos(pi/5)"
    # or: random = { distribution = "uniform", low = -5, high = 5, n = 20, seed = 1 }
    # normalise = true            # every row divided by its norm, exactly

    [simulation]
    horizon = 10
    checkpoints = 41
    precision = "float64"         # "auto" or a number of digits
    continuation = true           # float64: follow a certified hardmax in closed form
    cluster_tolerance = 1e-6

Errors name the file, the field and the problem, and suggest the nearest known field for a typo.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array
from verify.exact.reals import normalise_rows
from verify.model import Instance, Model

__all__ = ["InstanceFile", "load_instance_file", "parse_instance", "random_tokens",
           "instance_to_toml"]

TOP_KEYS = {"name", "description", "model", "tokens", "simulation", "expect"}
MODEL_KEYS = {"V", "Q", "K", "beta", "form", "attention", "mask", "normalisation", "h", "heads",
              "mlp"}
TOKEN_KEYS = {"x0", "random", "normalise"}
RANDOM_KEYS = {"distribution", "low", "high", "n", "seed", "scale"}
SIMULATION_KEYS = {"horizon", "checkpoints", "precision", "rtol", "atol", "error_estimate",
                   "symmetry", "cluster_tolerance", "max_steps", "continuation"}
DISTRIBUTIONS = ("uniform", "gaussian", "sphere")
#: At most this many random coordinates n·d are drawn (the memory of the dynamics is checked
#: later, from n, d and the precision: :mod:`verify.model.resources`).
MAX_RANDOM_ENTRIES = 10**8


@dataclass
class InstanceFile:
    """What an instance file holds: the :class:`~verify.model.Instance` and its settings."""

    instance: Instance
    simulation: dict = field(default_factory=dict)
    description: str = ""
    source: str = ""


def _check_table(where: str, table: object, source: str) -> dict:
    """``table`` must be a TOML table: returns a copy, else raises naming ``where``."""
    if not isinstance(table, dict):
        raise InvalidArgument(f"{source}: {where} must be a table ([{where}] or {where} = {{...}})"
                              f", not {_describe(table)}.")
    return dict(table)


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}"[:60]


def _positive_number(value: object) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool) and \
        math.isfinite(value) and value > 0


#: The simulation settings: a test of the value and the rule it states.
SIMULATION_RULES = {
    "horizon": (lambda v: _positive_number(v) or isinstance(v, str), "a positive number"),
    "checkpoints": (lambda v: (isinstance(v, int) and not isinstance(v, bool))
                    or (isinstance(v, list) and len(v) >= 2 and all(
                        isinstance(t, int | Decimal | str) and not isinstance(t, bool)
                        for t in v)),
                    "a count of at least 2, or a list of times from 0"),
    "precision": (lambda v: v in ("float64", "auto")
                  or (isinstance(v, int) and not isinstance(v, bool) and v >= 16),
                  '"float64", "auto" or a number of decimal digits (at least 16)'),
    "rtol": (lambda v: _positive_number(v) and v < 1, "a number between 0 and 1"),
    "atol": (_positive_number, "a positive number"),
    "cluster_tolerance": (_positive_number, "a positive distance"),
    "error_estimate": (lambda v: isinstance(v, bool), "true or false"),
    "symmetry": (lambda v: v in ("auto", "off"), '"auto" or "off"'),
    "max_steps": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                  "a positive integer"),
}


def _check_simulation(simulation: dict, source: str) -> None:
    for key, value in simulation.items():
        test, rule = SIMULATION_RULES[key]
        if not test(value):
            raise InvalidArgument(f"{source}: simulation.{key} = {_describe(value)}: use {rule}.")


def _check_keys(where: str, table: dict, allowed: set[str], source: str) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise InvalidArgument(
                f"{source}: unknown field {where}{key!r}.{hint} Known fields: "
                f"{', '.join(sorted(allowed))}."
            )


def random_tokens(spec: dict, d: int, source: str = "<instance>") -> np.ndarray:
    """Seeded random initial tokens (``n×d``, float64, taken at their exact binary values).

    ``distribution``: ``"uniform"`` on ``[low, high]^d``, ``"gaussian"`` (``scale``), or
    ``"sphere"`` (uniform on the unit sphere).

    >>> random_tokens({"distribution": "uniform", "low": -1, "high": 1, "n": 2, "seed": 0}, 2).shape
    (2, 2)
    """
    _check_keys("tokens.random.", spec, RANDOM_KEYS, source)
    for key in ("n", "seed"):
        if not isinstance(spec.get(key), int):
            raise InvalidArgument(f"{source}: tokens.random.{key} must be an integer.")
    distribution = spec.get("distribution", "uniform")
    if distribution not in DISTRIBUTIONS:
        raise InvalidArgument(f"{source}: tokens.random.distribution={distribution!r} must be "
                              f"one of {', '.join(DISTRIBUTIONS)}.")
    n = spec["n"]
    if not 1 <= n <= MAX_RANDOM_ENTRIES // max(d, 1):
        raise InvalidArgument(f"{source}: tokens.random.n={n} must be between 1 and "
                              f"{MAX_RANDOM_ENTRIES // max(d, 1)} (at most {MAX_RANDOM_ENTRIES} "
                              "coordinates).")
    if spec["seed"] < 0:
        raise InvalidArgument(f"{source}: tokens.random.seed={spec['seed']} must be "
                              "non-negative (a NumPy seed).")
    rng = np.random.default_rng(spec["seed"])
    if distribution == "uniform":
        low, high = float(spec.get("low", -1)), float(spec.get("high", 1))
        return rng.uniform(low, high, size=(n, d))
    points = rng.normal(0.0, float(spec.get("scale", 1)), size=(n, d))
    if distribution == "sphere":
        points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points


def _normalised(tokens: dict, x0, source: str):
    """``x0`` with every row divided by its norm, exactly (``normalise = true``)."""

    if tokens["normalise"] is not True:
        raise InvalidArgument(f"{source}: tokens.normalise = {_describe(tokens['normalise'])}:"
                              " use true or false.")
    try:
        return normalise_rows(rational_array("x0", x0)[0])
    except ValueError as exc:
        raise InvalidArgument(f"{source}: tokens.normalise: {exc}.") from None


def parse_instance(data: dict, source: str = "<instance>") -> InstanceFile:
    """Build an :class:`InstanceFile` from parsed TOML ``data`` (errors name ``source``)."""
    _check_keys("", data, TOP_KEYS, source)
    if "model" not in data:
        raise InvalidArgument(f"{source}: missing table [model] (at least V = [[...]]).")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise InvalidArgument(f"{source}: {key} must be a string, not "
                                  f"{_describe(data[key])}.")
    model_table = _check_table("model", data["model"], source)
    _check_keys("model.", model_table, MODEL_KEYS, source)
    try:
        model = Model(**model_table)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{source}: [model]: {exc}") from None
    tokens = data.get("tokens")
    if not tokens:
        raise InvalidArgument(
            f"{source}: missing table [tokens] with x0 = [[...]] or random = {{...}}."
        )
    tokens = _check_table("tokens", tokens, source)
    _check_keys("tokens.", tokens, TOKEN_KEYS, source)
    if ("x0" in tokens) == ("random" in tokens):
        raise InvalidArgument(f"{source}: [tokens] needs exactly one of x0 or random.")
    x0 = tokens["x0"] if "x0" in tokens else random_tokens(
        _check_table("tokens.random", tokens["random"], source), model.d, source)
    if tokens.get("normalise", False) is not False:
        x0 = _normalised(tokens, x0, source)
    try:
        instance = Instance(model, x0, name=str(data.get("name", Path(source).stem)))
    except InvalidArgument as exc:
        raise InvalidArgument(f"{source}: [tokens]: {exc}") from None
    simulation = _check_table("simulation", data.get("simulation", {}), source)
    _check_keys("simulation.", simulation, SIMULATION_KEYS, source)
    _check_simulation(simulation, source)
    for key, value in simulation.items():
        if isinstance(value, Decimal):
            simulation[key] = str(value) if key == "horizon" else float(value)
    return InstanceFile(instance, simulation, str(data.get("description", "")), source)


def load_instance_file(path: str | Path) -> InstanceFile:
    """Read an instance TOML file (see the module docstring for the format)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"Cannot read instance file {str(path)!r}: {exc.strerror}.") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"{path}: not an instance file: not UTF-8 text ({exc.reason} at "
                              f"byte {exc.start}); instance files are TOML.") from None
    try:
        data = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgument(f"{path}: not valid TOML: {exc}.") from None
    return parse_instance(data, str(path))


def _toml_value(value) -> str:
    if isinstance(value, np.ndarray):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def instance_to_toml(instance: Instance, simulation: dict | None = None,
                     description: str = "") -> str:
    """An instance file (exact: every entry written as an exact rational string) that
    :func:`load_instance_file` reads back to the same instance."""
    model = instance.model
    lines = [f"name = {_toml_value(instance.name or 'instance')}"]
    if description:
        lines.append(f"description = {_toml_value(description)}")
    lines.append("\n[model]")
    if model.single_head:
        for name in ("V", "Q", "K"):
            lines.append(f"{name} = {_toml_value(getattr(model, name))}")
    for key, value in model.describe().items():
        if key in ("d", "heads", "mlp") or value is None:
            continue
        if key == "mask" and value == "adjacency":
            value = model.mask.astype(int)
        lines.append(f"{key} = {_toml_value(value)}")
    for head in model.heads if not model.single_head else ():
        lines.append("\n[[model.heads]]")
        for name in ("V", "Q", "K"):
            lines.append(f"{name} = {_toml_value(getattr(head, name))}")
    if model.has_mlp:
        lines.append("\n[model.mlp]")
        lines.append(f"W = {_toml_value(model.mlp.W)}")
        lines.append(f"activation = {_toml_value(model.mlp.activation)}")
        if model.mlp.bias is not None:
            lines.append(f"bias = {_toml_value(model.mlp.bias)}")
    lines.append("\n[tokens]")
    lines.append(f"x0 = {_toml_value(instance.x0)}")
    if simulation:
        lines.append("\n[simulation]")
        for key, value in simulation.items():
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"
