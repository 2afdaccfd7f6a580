r"""The vocabulary of conclusions and predictions: the registries a claim file names.

A claim file (a paper claim or a user's conjecture) says what it concludes in one or more
``[[conclusion]]`` tables::

    [[conclusion]]
    type = "converges"                 # a name in CONCLUSIONS
    to = { predict = "polytope-S" }    # a key of that type: a formula or a prediction

Each type is a :class:`ConclusionType`, registered by :mod:`verify.judge` with
:func:`register_conclusion`: its keys (one line of documentation each), which are required, an
optional validator, what the decision needs from the numerics (``needs``), whether it is a
statement about ``t → ∞`` (``asymptotic``: then a violation needs a certificate that the end
will not change, see :mod:`verify.judge`) and the judge. A *prediction* is a small function
computing a theorem's exact prediction for an instance (registered by :mod:`verify.predict`
with :func:`register_prediction`); a conclusion key takes ``{ predict = "name" }`` wherever it
takes a formula of the same kind.

Every conclusion table may also say ``when = ["hypothesis", ...]``: the conclusion applies only
to the instances where these hypotheses hold (e.g. an observation the paper makes for one
activation of an MLP); elsewhere it is not judged and says so.

The registries live here, below both the code that registers (:mod:`verify.judge`,
:mod:`verify.predict`) and the code that looks up (the claim loader, the runner). They are
filled by the registering packages' own import: ``import verify.judge`` registers every
conclusion and prediction (:mod:`verify.claim` does it, so a claim file can always be read).

Examples
--------
>>> import verify.judge  # registers the conclusions and predictions
>>> specs = parse_conclusions([{"type": "consensus"}], "f.toml")
>>> specs[0].type, specs[0].where, specs[0].kind.asymptotic
('consensus', 'conclusion', True)
>>> parse_conclusions([{"type": "consensos"}], "f.toml")
Traceback (most recent call last):
    ...
verify.errors.InvalidArgument: f.toml: conclusion.type: unknown conclusion 'consensos'. Did ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verify.errors import InvalidArgument
from verify.exact.plain import fail, suggest, to_plain
from verify.vocabulary.hypothesis_expressions import check_hypothesis

__all__ = ["ConclusionType", "ConclusionSpec", "PredictionType", "CONCLUSIONS", "PREDICTIONS",
           "register_conclusion", "register_prediction", "parse_conclusions",
           "check_prediction", "is_prediction"]

CONCLUSIONS: dict[str, ConclusionType] = {}
PREDICTIONS: dict[str, PredictionType] = {}

#: Keys every conclusion table may have besides its type's own keys.
COMMON_KEYS = {"when": "hypotheses (names) under which this conclusion applies; elsewhere it "
                       "is not judged"}


@dataclass(frozen=True)
class ConclusionType:
    """One word of the vocabulary.

    Attributes
    ----------
    name : str
        What ``type = "..."`` says.
    summary : str
        One line: the mathematical statement.
    needs : str
        What the decision needs from the numerics and its decision rule.
    asymptotic : bool
        A statement about ``t → ∞``: *holds* is re-checked at a longer horizon and *violated*
        needs a certificate that the observed end will not change.
    keys : dict
        Allowed keys (besides ``type`` and ``when``) with one line each.
    required : tuple of str
    validate : callable or None
        ``validate(parameters, source, where)`` raising through :func:`fail`.
    judge : callable
        ``judge(evaluation) -> InstanceResult``.
    """

    name: str
    summary: str
    needs: str
    asymptotic: bool
    keys: dict
    required: tuple
    validate: Callable | None
    judge: Callable


@dataclass(frozen=True)
class PredictionType:
    """A theorem's prediction: ``function(evaluation) -> Prediction`` (see :mod:`verify.predict`).

    ``gives`` says what it computes (``"points"``, ``"targets"``, ``"hyperplanes"``,
    ``"rows"``, ``"polytope"``), so that a conclusion key can refuse a prediction of the wrong
    kind when the file is read."""

    name: str
    summary: str
    gives: str
    function: Callable


@dataclass(frozen=True)
class ConclusionSpec:
    """A validated conclusion table: its ``type``, its other keys (exact numbers as read),
    ``where`` it stands in the file and the hypotheses ``when`` it applies."""

    type: str
    parameters: dict
    where: str = "conclusion"
    when: tuple = field(default=())

    @property
    def kind(self) -> ConclusionType:
        return CONCLUSIONS[self.type]

    @property
    def asymptotic(self) -> bool:
        """A statement about ``t → ∞``: by its type, or a ``predicate`` with
        ``final_state = true``."""
        return self.kind.asymptotic or bool(self.parameters.get("final_state"))

    def to_json(self) -> dict:
        out = {"type": self.type, **to_plain(self.parameters)}
        if self.when:
            out["when"] = list(self.when)
        return out


def register_conclusion(name: str, *, summary: str, needs: str, asymptotic: bool,
                        keys: dict | None = None, required: tuple = (),
                        validate: Callable | None = None) -> Callable[[Callable], Callable]:
    """Decorator registering ``judge(evaluation) -> InstanceResult`` as conclusion ``name``."""
    def decorator(judge: Callable) -> Callable:
        if name in CONCLUSIONS and CONCLUSIONS[name].judge is not judge:
            raise InvalidArgument(f"conclusion {name!r} is already registered by "
                                  f"{CONCLUSIONS[name].judge.__module__}.")
        CONCLUSIONS[name] = ConclusionType(name, summary, needs, asymptotic, dict(keys or {}),
                                           tuple(required), validate, judge)
        return judge

    return decorator


def register_prediction(name: str, *, summary: str, gives: str
                        ) -> Callable[[Callable], Callable]:
    """Decorator registering ``function(evaluation) -> Prediction`` as prediction ``name``."""
    def decorator(function: Callable) -> Callable:
        if name in PREDICTIONS and PREDICTIONS[name].function is not function:
            raise InvalidArgument(f"prediction {name!r} is already registered by "
                                  f"{PREDICTIONS[name].function.__module__}.")
        PREDICTIONS[name] = PredictionType(name, summary, gives, function)
        return function

    return decorator


def is_prediction(value: object) -> bool:
    """Whether a conclusion value is ``{ predict = "name" }`` (rather than a formula)."""
    return isinstance(value, dict) and "predict" in value


def check_prediction(value: dict, gives: tuple, source: str, where: str) -> None:
    """Validate ``{ predict = "name" }``: a registered prediction that gives one of ``gives``."""
    extra = sorted(set(value) - {"predict"})
    if extra:
        fail(source, f"{where}.{extra[0]}", "a prediction table has the single key 'predict'.")
    name = value["predict"]
    if name not in PREDICTIONS:
        fail(source, f"{where}.predict", f"unknown prediction {name!r}."
             f"{suggest(str(name), PREDICTIONS)} Known predictions: "
             f"{', '.join(sorted(PREDICTIONS))}.")
    if PREDICTIONS[name].gives not in gives:
        fail(source, f"{where}.predict", f"{name!r} gives {PREDICTIONS[name].gives}, but this "
             f"key needs {' or '.join(gives)}.")


def parse_conclusions(value: object, source: str) -> tuple[ConclusionSpec, ...]:
    """Validate the ``conclusion`` entry of a claim file (one table or a list of tables).

    Raises
    ------
    InvalidArgument
        ``"<source>: conclusion[i].<key>: ..."`` for a missing or unknown type or key (with a
        suggestion), an unknown hypothesis in ``when``, or whatever the type's validator
        rejects.
    """
    tables = [value] if isinstance(value, dict) else value
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        fail(source, "conclusion", "must be a table [conclusion] or tables [[conclusion]] with "
             f"a 'type' (one of {', '.join(sorted(CONCLUSIONS))}).")
    specs = []
    for i, table in enumerate(tables):
        where = "conclusion" if len(tables) == 1 else f"conclusion[{i}]"
        kind = table.get("type")
        if kind not in CONCLUSIONS:
            problem = "missing 'type'" if kind is None else f"unknown conclusion {kind!r}."
            fail(source, f"{where}.type", f"{problem}{suggest(str(kind), CONCLUSIONS)} Known "
                 f"conclusions: {', '.join(sorted(CONCLUSIONS))}.")
        ctype = CONCLUSIONS[kind]
        parameters = {k: v for k, v in table.items() if k not in ("type", "when")}
        for key in parameters:
            if key not in ctype.keys:
                known = ", ".join([*ctype.keys, *COMMON_KEYS]) or "none"
                fail(source, f"{where}.{key}", f"unknown key for a {kind!r} conclusion."
                     f"{suggest(key, [*ctype.keys, *COMMON_KEYS])} Its keys: {known}.")
        for key in ctype.required:
            if key not in parameters:
                fail(source, f"{where}.{key}", f"missing (required by a {kind!r} conclusion: "
                     f"{ctype.keys[key]}).")
        when = table.get("when", [])
        if not isinstance(when, list) or not all(isinstance(h, str) for h in when):
            fail(source, f"{where}.when", f"{when!r} must be a list of hypothesis names.")
        for j, name in enumerate(when):
            check_hypothesis(name, source, f"{where}.when[{j}]")
        if ctype.validate is not None:
            ctype.validate(parameters, source, where)
        specs.append(ConclusionSpec(kind, parameters, where, tuple(when)))
    return tuple(specs)
