r"""The search space of a universal conjecture: the ``[search]`` table of a conjecture file.

A :class:`SearchSpace` lists what a search may vary — the ranges of ``n`` and ``d``, the classes
of ``V`` and of ``QᵀK``, the choices of ``beta``, the token distributions — and what it keeps
fixed (the model options, the number of heads, the horizon, the checkpoints, the precision).
:func:`parse_search` validates the table (errors read ``"<file>: search.<key>[i]: ..."``) and
fills every absent key from the conjecture's hypotheses, so that most draws are in scope.

Classes of ``V`` are the generators of :data:`verify.claim.V_GENERATORS` plus two classes
drawn by Hypothesis itself (small integers shrink and read well):

* ``integer-diagonal`` — ``V = diag(v_1, …, v_d)`` with integers ``|v_i| ≤ bound``;
* ``integer`` — every entry an integer in ``[-bound, bound]``;

and ``QK`` classes are :data:`verify.claim.QK_GENERATORS` plus ``integer`` (``Q = I`` and an
integer ``K`` with entries in ``[-bound, bound]``).  ``bound`` defaults to 3.

Examples
--------
>>> space = parse_search({"n": [3, 4], "tokens": ["sphere", {"distribution": "clustered",
...                       "k": 3}]}, "c.toml", hypotheses=["is_identity", "d >= 2"])
>>> print(space.describe())
n: 3..4
d: 2..3 (default)
V: identity (default)
QK: identity, spd-NNt, random-uniform, integer (default)
beta: 1 (default)
tokens: sphere, clustered(k=3)
model: defaults (form=z, softmax, full attention), single head
horizon: 10 (default), checkpoints: 41, precision: float64
>>> try:
...     parse_search({"V": ["identty"]}, "c.toml")
... except InvalidArgument as exc:
...     print(str(exc).split(" Known")[0])
c.toml: search.V[0]: unknown V class 'identty'. Did you mean 'identity'?
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from verify.claim import check_hypotheses
from verify.claim._family import GeneratorSpec
from verify.claim._family_fields import _check_keys, _checkpoints, _int, _number
from verify.claim._family_file import _generator, _model_options, _precision
from verify.claim._generators import QK_GENERATORS, TOKEN_DISTRIBUTIONS, V_GENERATORS
from verify.errors import InvalidArgument
from verify.exact.plain import fail, suggest
from verify.model import BOUNDED_SCORES, Model
from verify.model.resources import check_horizon, check_memory
from verify.search._beta import BetaRange, parse_beta_range
from verify.search._membership import HYPOTHESIS_OF_CLASS, entries_in_class
from verify.vocabulary.hypothesis_expressions import beta_excluded, pinned, size_bounds

__all__ = ["SearchSpace", "parse_search", "SEARCH_KEYS", "HYPOTHESIS_V_CLASSES",
           "HYPOTHESIS_QK_CLASSES", "REGISTRIES", "feasible", "spec_label"]

SEARCH_KEYS = ("n", "d", "V", "QK", "beta", "tokens", "model", "heads", "horizon",
               "checkpoints", "precision")
HYPOTHESIS_V_CLASSES = ("integer-diagonal", "integer")
HYPOTHESIS_QK_CLASSES = ("integer",)
REGISTRIES = {"V": V_GENERATORS, "QK": QK_GENERATORS, "tokens": TOKEN_DISTRIBUTIONS}
_BOUND = 3
_MAX_BOUND = 9

BROAD_V = ("identity", "negative-identity", "random", "symmetric-MMt", "paranormal",
           "complex-leading", "integer-diagonal", "integer")
BROAD_QK = ("identity", "spd-NNt", "random-uniform", "integer")
BROAD_TOKENS = ("uniform", "gaussian", "sphere", "clustered", "nearly-tied", "cross-polytope",
                "hypercube", "antipodal", "lattice", "regular-polygon", "distinct-1d")

# hypothesis -> the V classes that satisfy it (first match wins: most specific first)
_V_FOR = (("is_identity", ("identity",)), ("is_negative_identity", ("negative-identity",)),
          ("scalar_positive", ("scalar-positive",)),
          ("complex_leading_pair", ("complex-leading",)),
          ("good_triple_with_multiplicity", ("paranormal",)), ("paranormal", ("paranormal",)),
          ("good_triple", ("random-good-triple",)))
_QK_FOR = (("qk_identity", ("identity",)),
           *((name, ("identity", "spd-NNt")) for name in (
               "qk_positive_definite", "good_triple", "good_triple_with_multiplicity",
               "scalar_positive")))
_D1 = ("d == 1", "scalar_positive", "above_escape_threshold")
_D2 = ("d >= 2", "complex_leading_pair")


@dataclass(frozen=True)
class SearchSpace:
    """What a conjecture search varies and what it keeps fixed (see the module docstring).

    Attributes
    ----------
    n, d : tuple of int
        Inclusive ranges ``(lo, hi)``.
    V, QK, tokens : tuple of GeneratorSpec
        The classes to draw from (``integer``/``integer-diagonal`` are drawn by Hypothesis).
    beta : tuple of Fraction or BetaRange
        The choices of ``beta``: values, or distributions on a range
        (:mod:`verify.search._beta`, e.g. log-uniform on ``(0, ∞)``).
    model : dict
        Fixed model options (``form``, ``attention``, ``mask``, ``normalisation``, ``h``,
        ``mlp``), validated as in a family's ``model`` table.
    variants : tuple of dict
        Further model variants (``model = [{...}, {...}]`` in the file): the search draws one
        of :attr:`models`.
    horizon : Fraction
    checkpoints : int or tuple of Fraction
    precision : "float64", "auto" or int
    heads : int
    defaults : tuple of str
        The keys that were absent and filled in (from the hypotheses where they say something).
    """

    n: tuple[int, int] = (2, 6)
    d: tuple[int, int] = (1, 3)
    V: tuple[GeneratorSpec, ...] = ()
    QK: tuple[GeneratorSpec, ...] = ()
    beta: tuple = (Fraction(1),)
    tokens: tuple[GeneratorSpec, ...] = ()
    model: dict = field(default_factory=dict)
    horizon: Fraction = Fraction(10)
    checkpoints: int | tuple = 41
    precision: str | int = "float64"
    heads: int = 1
    defaults: tuple[str, ...] = ()
    variants: tuple = ()

    @property
    def models(self) -> tuple:
        """Every model variant of the space (the first is :attr:`model`)."""
        return (self.model, *self.variants)

    def contains(self, instance) -> str | None:
        """Why ``instance`` is outside this space (``n``, ``d``, the heads, ``beta``, the fixed
        model options, the classes of ``V`` and ``QᵀK``: :mod:`verify.search._membership`), or
        ``None`` when it is inside. The tokens are free: shrinking them is the point.

        >>> from verify.model import Instance, Model
        >>> space = parse_search({"n": [3, 4], "d": 2, "V": "identity"}, "c.toml")
        >>> space.contains(Instance(Model(V=[[1, 0], [0, 1]]), [[0, 1], [1, 0], [1, 1]]))
        >>> space.contains(Instance(Model(V=[[1, 0], [0, 2]]), [[0, 1], [1, 0], [1, 1]]))
        'V is in none of its classes (identity)'
        """
        model = instance.model
        for key, value in (("n", instance.n), ("d", instance.d)):
            lo, hi = getattr(self, key)
            if not lo <= value <= hi:
                return f"{key} = {value} is outside {lo}..{hi}"
        if len(model.heads) != self.heads:
            return f"{len(model.heads)} head(s), the space has {self.heads}"
        if not any(b.contains(model.beta) if isinstance(b, BetaRange) else b == model.beta
                   for b in self.beta):
            return f"beta = {model.beta} is not one of {[_show(b) for b in self.beta]}"
        problem = self._model_options_differ(model)
        if problem:
            return problem
        for axis in ("V", "QK"):
            for j, head in enumerate(model.heads):
                if not self._in_some_class(axis, head.V if axis == "V" else head.B, instance):
                    names = ", ".join(spec.name for spec in getattr(self, axis))
                    label = axis if self.heads == 1 else f"{axis} of head {j}"
                    return f"{label} is in none of its classes ({names})"
        return None

    def _model_options_differ(self, model) -> str | None:
        """Why ``model`` is none of the space's variants (the first variant's reason), or
        ``None``."""
        reasons = [_options_differ(options, model) for options in self.models]
        return None if None in reasons else reasons[0]

    def _in_some_class(self, axis: str, matrix, instance) -> bool:
        for spec in getattr(self, axis):
            inside = entries_in_class(axis, spec.name, spec.params, matrix)
            hypothesis = HYPOTHESIS_OF_CLASS.get((axis, spec.name))
            if inside is None and hypothesis is not None and self.heads == 1:
                inside = check_hypotheses([hypothesis], instance).holds is True
            if inside:
                return True
        return False

    def describe(self) -> str:
        """One line per axis ("families covered" in a report); ``(default)`` marks filled keys."""
        def mark(key):
            return " (default)" if key in self.defaults else ""

        def rng(key):
            lo, hi = getattr(self, key)
            return f"{key}: {lo}" if lo == hi else f"{key}: {lo}..{hi}"

        def specs(key):
            return f"{key}: " + ", ".join(spec_label(s, REGISTRIES[key])
                                          for s in getattr(self, key)) + mark(key)

        options = " | ".join(", ".join(f"{k}={_show(v)}" for k, v in m.items()) or
                             "defaults (form=z, softmax, full attention)" for m in self.models)
        heads = "single head" if self.heads == 1 else f"{self.heads} heads"
        return "\n".join([
            rng("n") + mark("n"), rng("d") + mark("d"), specs("V"), specs("QK"),
            "beta: " + ", ".join(_show(b) for b in self.beta) + mark("beta"),
            specs("tokens"), f"model: {options}, {heads}",
            f"horizon: {_show(self.horizon)}{mark('horizon')}, checkpoints: "
            f"{_show(self.checkpoints)}, precision: {self.precision}"])


def spec_label(spec: GeneratorSpec, registry: dict) -> str:
    """``name`` or ``name(param=value, …)`` listing the parameters that differ from defaults."""
    defaults = {k: v[1] for k, v in registry[spec.name].params.items()} \
        if spec.name in registry else {"bound": _BOUND}
    shown = [f"{k}={_show(v)}" for k, v in spec.params.items() if v != defaults.get(k)]
    return spec.name + (f"({', '.join(shown)})" if shown else "")


def _show(value) -> str:
    if isinstance(value, BetaRange):
        return value.describe()
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def feasible(registry: dict, spec: GeneratorSpec, n: int, d: int) -> str | None:
    """The problem of ``spec`` with shapes ``(n, d)`` (its ``requires`` hook), or ``None``."""
    if spec.name not in registry or registry[spec.name].requires is None:
        return None
    return registry[spec.name].requires(n, d, spec.params)


def _range(value, key, source, minimum):
    where = f"search.{key}"
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if not isinstance(value, list) or len(value) != 2:
        fail(source, where, f"{value!r} must be an integer or a range [lo, hi] of integers.")
    lo = _int(value[0], f"{where}[0]", source, minimum)
    hi = _int(value[1], f"{where}[1]", source, minimum)
    if lo > hi:
        fail(source, where, f"[{lo}, {hi}] is empty: needs lo ≤ hi.")
    return lo, hi


def _classes(value, registry, specials, what, key, source):
    items, indexed = (value, True) if isinstance(value, list) else ([value], False)
    if not items:
        fail(source, f"search.{key}", f"is empty; list at least one {what}.")
    specs = []
    for i, item in enumerate(items):
        where = f"search.{key}[{i}]" if indexed else f"search.{key}"
        name = item.get("distribution" if registry is TOKEN_DISTRIBUTIONS else "generator") \
            if isinstance(item, dict) else item
        if isinstance(name, str) and name in specials:
            given = {k: v for k, v in item.items() if k != "generator"} \
                if isinstance(item, dict) else {}
            for param in given:
                if param != "bound":
                    fail(source, f"{where}.{param}", f"unknown parameter {param!r} of {what} "
                         f"{name!r}.{suggest(param, ['bound'])} Known: bound.")
            bound = _int(given.get("bound", _BOUND), f"{where}.bound", source, 1)
            if bound > _MAX_BOUND:
                fail(source, f"{where}.bound", f"{bound} must be at most {_MAX_BOUND} (small "
                     "integers are the point of this class).")
            specs.append(GeneratorSpec(name, {"bound": bound}))
            continue
        if isinstance(name, str) and name not in registry:
            known = [*registry, *specials]
            fail(source, where, f"unknown {what} {name!r}.{suggest(name, known)} Known: "
                 f"{', '.join(known)}.")
        specs.append(_generator(item, registry, what, where, source))
    return tuple(specs)


def _default_classes(hypotheses, table):
    for name, classes in table:
        if name in hypotheses:
            return classes
    return None


#: Token distributions whose draws always (or for even n) lie in a null set a hypothesis
#: excludes: a default search leaves them out rather than drawing instances out of scope.
_NULL_SETS = {"no_exact_symmetry": ("cross-polytope", "hypercube", "antipodal",
                                    "regular-polygon", "symmetric-pair"),
              "no_antipodal_pair": ("cross-polytope", "hypercube", "antipodal",
                                    "regular-polygon"),
              "distinct_tokens": ()}


def _model_defaults() -> dict:
    """The options a variant has when its table does not give them: :class:`Model`'s own
    defaults (read off its signature, not restated)."""
    import inspect


    return {name: p.default for name, p in inspect.signature(Model.__init__).parameters.items()
            if name in ("form", "attention", "mask", "normalisation", "h", "mlp")}


def _options_differ(options: dict, model) -> str | None:
    """Why ``model`` differs from the options of one variant (absent ones at their defaults),
    or ``None``."""
    for key, value in {**_model_defaults(), **options}.items():
        if key == "mlp":
            given = (value or {}).get("activation", "relu") if value else None
            have = None if not model.has_mlp else model.mlp.activation
            if given != have:
                return f"the MLP activation {have} is not the space's {given}"
            continue
        have = getattr(model, key, None)
        same = bool(np.array_equal(np.asarray(have), np.asarray(value))) \
            if isinstance(have, np.ndarray) else have == value
        if not same:
            return f"model.{key} = {have!r} is not the space's {value!r}"
    return None


def _default_tokens(hypotheses, models, pins: dict) -> list:
    """Token distributions that suit every model variant and the hypotheses (and what they
    pin: ``equiangular(x0, rho)`` draws equiangular configurations with that ``rho``)."""
    if "rho" in pins:
        return [{"distribution": "equiangular", "rho": pins["rho"]},
                {"distribution": "equiangular", "rho": pins["rho"], "rotate": True}]
    if pins.get("in_open_hemisphere"):
        return ["hemisphere"]
    if pins.get("unit_rows"):
        return ["sphere-exact", "regular-polygon"]
    if "above_escape_threshold" in hypotheses:
        return [{"distribution": "gaussian", "scale": 3},
                {"distribution": "uniform", "low": -4, "high": 4}]
    if "in_open_hemisphere" in hypotheses:  # exact unit points, all with x_d >= 1/10
        return ["hemisphere"]
    norms = {m.get("normalisation") for m in models}
    if "sphere" in norms:  # the tokens must have unit norm
        tokens = ["sphere", "sphere-exact", "cross-polytope", "regular-polygon"]
    elif "pre-ln" in norms:  # the tokens must be nonzero
        tokens = [t for t in BROAD_TOKENS if t != "lattice"]
    else:
        tokens = list(BROAD_TOKENS)
    excluded = {t for h in hypotheses for t in _NULL_SETS.get(h, ())}
    return [t for t in tokens if t not in excluded] or tokens


def parse_search(table: dict | None, source: str, hypotheses=()) -> SearchSpace:
    """Validate a ``[search]`` table; absent keys are derived from ``hypotheses``.

    Parameters
    ----------
    table : dict or None
        The table (``None``: every key from the defaults).
    source : str
        The file, for messages ``"<source>: search.<key>[i]: ..."``.
    hypotheses : iterable of str
        The conjecture's hypotheses (names of :data:`verify.claim.HYPOTHESES`).

    Returns
    -------
    SearchSpace

    Raises
    ------
    InvalidArgument
        An unknown key (with a suggestion), a bad range, class, parameter or model option, a
        class that fits no ``(n, d)`` of the space, or a range that the hypotheses exclude.
    """
    table = {} if table is None else table
    if not isinstance(table, dict):
        fail(source, "search", "must be a table ([search]).")
    _check_keys(table, SEARCH_KEYS, "search", source)
    hypotheses = tuple(hypotheses)
    defaults = tuple(k for k in ("n", "d", "V", "QK", "beta", "tokens", "horizon")
                     if k not in table)
    bounds = size_bounds(hypotheses)
    pins = pinned(hypotheses)  # V == [[...]], mask == [[...]], equiangular(x0, rho), ...
    for key, axis in (("V", "d"), ("mask", "n")):
        if key in pins:
            size, (lo, hi) = len(pins[key]), bounds[axis]
            bounds[axis] = (max(lo, size), size if hi is None else min(hi, size))
    if any(h in hypotheses for h in _D1):
        bounds["d"] = (1, 1)
    if any(h in hypotheses for h in _D2):
        bounds["d"] = (max(bounds["d"][0], 2), bounds["d"][1])
    n = _sizes(table.get("n"), (2, 6), bounds["n"], "n", source)
    d = _sizes(table.get("d"), (1, 3), bounds["d"], "d", source)
    precision = _precision(table.get("precision", "float64"), "search.precision", source)
    check_memory(n[1], d[1], precision, f"{source}: search.n, search.d")  # before any d² work
    default_V = [{"generator": "matrix", "matrix": [list(row) for row in pins["V"]]}] \
        if "V" in pins else list(_default_classes(hypotheses, _V_FOR) or BROAD_V)
    V = _classes(table.get("V", default_V),
                 V_GENERATORS, HYPOTHESIS_V_CLASSES, "V class", "V", source)
    QK = _classes(table.get("QK", list(_default_classes(hypotheses, _QK_FOR) or BROAD_QK)),
                  QK_GENERATORS, HYPOTHESIS_QK_CLASSES, "QK class", "QK", source)
    beta = _betas(table.get("beta", [1]), source)
    for i, b in enumerate(beta):
        if isinstance(b, BetaRange):  # drawn values the hypotheses exclude are out of scope
            continue
        excluded = beta_excluded(hypotheses, b)
        if excluded and "beta" not in table:
            fail(source, "search.beta", f"the default beta = {b} is excluded by the hypotheses "
                 f"({excluded}); give the choices, e.g. search.beta = [...].")
        if excluded:
            fail(source, f"search.beta[{i}]" if isinstance(table["beta"], list)
                 else "search.beta", f"{b} but the hypotheses need {excluded}; the search "
                 "draws only what they allow.")
    heads = _int(table.get("heads", 1), "search.heads", source, 1)
    given = table.get("model", {})
    if "mask" in pins:  # the hypotheses name the mask: every variant has it
        mask = [[int(v) for v in row] for row in pins["mask"]]
        given = [dict(m, mask=m.get("mask", mask)) if isinstance(m, dict) else m
                 for m in given] if isinstance(given, list) else \
            dict(given, mask=given.get("mask", mask)) if isinstance(given, dict) else given
    if isinstance(given, list):  # several variants: the search draws one of them
        if not given:
            fail(source, "search.model", "is an empty list; give a table or a list of tables.")
        models = [_model(m, n, d, heads, beta, source, f"search.model[{i}]")
                  for i, m in enumerate(given)]
    else:
        models = [_model(given, n, d, heads, beta, source)]
    tokens = _classes(table.get("tokens", _default_tokens(hypotheses, models, pins)),
                      TOKEN_DISTRIBUTIONS, (), "token distribution", "tokens", source)
    horizon = _number(table.get("horizon", 10), "search.horizon", source)
    if horizon <= 0:
        fail(source, "search.horizon", f"{horizon} must be positive.")
    check_horizon(horizon, f"{source}: search.horizon", bounded=all(
        m.get("normalisation") in BOUNDED_SCORES for m in models))
    checkpoints = _checkpoints(table.get("checkpoints", 41), horizon, "search.checkpoints",
                               source)
    space = SearchSpace(n, d, V, QK, beta, tokens, models[0], horizon, checkpoints, precision,
                        heads, defaults, tuple(models[1:]))
    space = _drop_unfit_defaults(space)
    _check_feasible(space, source)
    return space


def _sizes(given, default: tuple, bound: tuple, key: str, source: str) -> tuple[int, int]:
    """The range of ``n`` or ``d``: the given one, or the default, kept inside what the
    hypotheses state (``bound``: ``(lo, hi)``, ``hi`` may be ``None``)."""
    lo, hi = bound
    need = f"= {lo}" if lo == hi else f"≥ {lo}" if hi is None else f"in {lo}..{hi}"
    if hi is not None and lo > hi:
        fail(source, "hypotheses", f"no {key} satisfies them (they need {key} ≥ {lo} and "
             f"≤ {hi}).")
    if given is not None:
        a, b = _range(given, key, source, 1)
        if b < lo or (hi is not None and a > hi):
            fail(source, f"search.{key}", f"{[a, b]} but the hypotheses need {key} {need}; "
                 "change the range.")
        return max(a, lo), b if hi is None else min(b, hi)
    a, b = max(default[0], lo), default[1] if hi is None else min(default[1], hi)
    if a > b:  # the default range misses the hypotheses' range: start where they do
        a = lo
        b = a + default[1] - default[0] if hi is None else min(hi, a + default[1] - default[0])
    return a, b


def _drop_unfit_defaults(space: SearchSpace) -> SearchSpace:
    """Remove the default classes that fit no shape of the space (a given class that fits
    none is an error instead, reported by :func:`_check_feasible`)."""
    pairs = [(n, d) for d in range(space.d[0], space.d[1] + 1)
             for n in range(space.n[0], space.n[1] + 1)]
    kept = {}
    for key, registry in REGISTRIES.items():
        if key in space.defaults:
            specs = tuple(s for s in getattr(space, key)
                          if any(not feasible(registry, s, n, d) for n, d in pairs))
            kept[key] = specs or getattr(space, key)
    return replace(space, **kept)


def _betas(value, source):
    items, indexed = (value, True) if isinstance(value, list) else ([value], False)
    if not items:
        fail(source, "search.beta", "is empty; list at least one beta.")
    betas = []
    for i, item in enumerate(items):
        where = f"search.beta[{i}]" if indexed else "search.beta"
        if isinstance(item, dict):  # a distribution: { distribution = "log-uniform", ... }
            betas.append(parse_beta_range(item, where, source, _number))
        else:  # 0 (uniform attention) and < 0 included
            betas.append(_number(item, where, source))
    return tuple(dict.fromkeys(betas))


def beta_values(betas) -> list[Fraction]:
    """One value per choice of ``beta`` (a range gives its centre)."""
    return [b.representative() if isinstance(b, BetaRange) else b for b in betas]


def _model(value, n, d, heads, beta, source, where: str = "search.model"):
    beta = beta_values(beta)
    if isinstance(value, dict) and "beta" in value:
        fail(source, f"{where}.beta", "beta is an axis of the search: give it as "
             "search.beta (a list of choices).")
    if isinstance(value, dict):
        for i, b in enumerate(beta[1:], 1):  # each beta once, with the smallest shapes
            try:
                _model_options(dict(value, beta=b), d[0], n[0], heads, where, source)
            except InvalidArgument as exc:
                raise InvalidArgument(f"{exc} (with search.beta[{i}] = {b})") from None
    options = None
    for dd in range(d[0], d[1] + 1):
        for nn in range(n[0], n[1] + 1):
            try:
                checked = _model_options(dict(value, beta=beta[0]) if isinstance(value, dict)
                                         else value, dd, nn, heads, where, source)
            except InvalidArgument as exc:
                if options is None:
                    raise
                raise InvalidArgument(f"{exc} (with d = {dd}, n = {nn}: the model options must "
                                      "suit every n and d of the space; narrow search.n or "
                                      "search.d)") from None
            options = options or checked
    options.pop("beta")
    return options


def _check_feasible(space: SearchSpace, source: str) -> None:
    pairs = [(n, d) for d in range(space.d[0], space.d[1] + 1)
             for n in range(space.n[0], space.n[1] + 1)]
    for key, registry in REGISTRIES.items():
        specs = getattr(space, key)
        for i, spec in enumerate(specs):
            problems = [feasible(registry, spec, n, d) for n, d in pairs]
            if all(problems):
                where = f"search.{key}[{i}]" if len(specs) > 1 else f"search.{key}"
                fail(source, where, f"{spec.name!r} fits no n in {list(space.n)} and d in "
                     f"{list(space.d)}: it {problems[0]}.")
    for n, d in pairs:
        if any(not feasible(V_GENERATORS, v, n, d) for v in space.V) and \
                any(not feasible(QK_GENERATORS, q, n, d) for q in space.QK) and \
                any(not feasible(TOKEN_DISTRIBUTIONS, t, n, d) for t in space.tokens):
            return
    fail(source, "search", "no (n, d) of the space suits a V class, a QK class and a token "
         "distribution at once; widen search.n or search.d, or add classes.")
