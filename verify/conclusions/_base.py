r"""The vocabulary of conclusions: the registry, the parsed form and what a judge receives.

A conjecture file states what it claims in one or more ``[conclusion]`` tables::

    [conclusion]
    type = "clusters"        # a name in CONCLUSIONS
    at_most = 2              # the type's own keys

Each type is a :class:`ConclusionType` registered with :func:`register_conclusion`: its keys
(with one line of documentation each), which of them are required, an optional extra validator,
what it needs from the numerics (``needs``, shown by ``verify check --help`` and the report),
whether it is a statement about ``t → ∞`` (``final_state``: the run is then extended while it
sits near an unstable equilibrium, see :mod:`verify.equilibria`) and the judge, a function
``judge(evaluation: Evaluation) -> InstanceResult`` built with
:func:`verify.claim.judge_instance` (so a verdict always compares a margin with its error).

Examples
--------
>>> specs = parse_conclusions([{"type": "consensus"}], "f.toml")
>>> specs[0].type, specs[0].where
('consensus', 'conclusion')
>>> parse_conclusions([{"type": "consensos"}], "f.toml")
Traceback (most recent call last):
    ...
verify.errors.InvalidArgument: f.toml: conclusion.type: unknown conclusion 'consensos'. Did ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from verify.claim._plain import fail, suggest
from verify.errors import InvalidArgument

__all__ = ["ConclusionType", "ConclusionSpec", "Evaluation", "CONCLUSIONS",
           "register_conclusion", "parse_conclusions", "quantity_error"]

CONCLUSIONS: dict[str, ConclusionType] = {}


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
        What the decision needs from the numerics (error estimate, fitted rate, certified
        graph, ...) and its decision rule, in a sentence or two.
    final_state : bool
        A statement about ``t → ∞``: judged only once the run is not sitting near an unstable
        equilibrium (metastability is resolved first).
    keys : dict
        Allowed keys (besides ``type``) with one line each.
    required : tuple of str
        Keys that must be present.
    validate : callable or None
        ``validate(parameters, source, where)`` raising through :func:`verify.claim._plain.fail`.
    judge : callable
        ``judge(evaluation) -> InstanceResult``.
    """

    name: str
    summary: str
    needs: str
    final_state: bool
    keys: dict
    required: tuple
    validate: Callable | None
    judge: Callable


@dataclass(frozen=True)
class ConclusionSpec:
    """A validated ``[conclusion]`` table: its ``type``, its other keys (exact numbers kept as
    read) and ``where`` it stands in the file (``"conclusion"`` or ``"conclusion[1]"``)."""

    type: str
    parameters: dict
    where: str = "conclusion"

    @property
    def kind(self) -> ConclusionType:
        return CONCLUSIONS[self.type]

    def to_json(self) -> dict:
        from verify.claim._plain import to_plain

        return {"type": self.type, **to_plain(self.parameters)}


@dataclass
class Evaluation:
    """What a judge receives for one instance.

    Attributes
    ----------
    request : verify.claim.CheckRequest
        The instance, family, seed, horizon, precision (``request.instance`` etc.).
    trajectory : verify.trajectory.Trajectory
        A successful run with an error estimate (``trajectory.error``) and its
        ``reference_run`` (the second route for any derived quantity, see
        :func:`quantity_error`).
    spec : ConclusionSpec
    cache : dict
        Shared between the conclusions of one instance (e.g. fitted token limits).
    """

    request: object
    trajectory: object
    spec: ConclusionSpec
    cache: dict = field(default_factory=dict)

    @property
    def parameters(self) -> dict:
        return self.spec.parameters


def register_conclusion(name: str, *, summary: str, needs: str, final_state: bool,
                        keys: dict | None = None, required: tuple = (),
                        validate: Callable | None = None) -> Callable[[Callable], Callable]:
    """Decorator registering ``judge(evaluation) -> InstanceResult`` as conclusion ``name``."""
    def decorator(judge: Callable) -> Callable:
        if name in CONCLUSIONS and CONCLUSIONS[name].judge is not judge:
            raise InvalidArgument(f"conclusion {name!r} is already registered by "
                                  f"{CONCLUSIONS[name].judge.__module__}.")
        CONCLUSIONS[name] = ConclusionType(name, summary, needs, final_state, dict(keys or {}),
                                           tuple(required), validate, judge)
        return judge

    return decorator


def parse_conclusions(value: object, source: str) -> tuple[ConclusionSpec, ...]:
    """Validate the ``conclusion`` entry of a conjecture file (one table or a list of tables).

    Raises
    ------
    InvalidArgument
        ``"<source>: conclusion[i].<key>: ..."`` for a missing or unknown type or key (with a
        suggestion), or whatever the type's validator rejects.
    """
    import verify.conclusions  # noqa: F401  (registers the vocabulary)

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
        parameters = {k: v for k, v in table.items() if k != "type"}
        for key in parameters:
            if key not in ctype.keys:
                known = ", ".join(ctype.keys) or "none"
                fail(source, f"{where}.{key}", f"unknown key for a {kind!r} conclusion."
                     f"{suggest(key, ctype.keys)} Its keys: {known}.")
        for key in ctype.required:
            if key not in parameters:
                fail(source, f"{where}.{key}", f"missing (required by a {kind!r} conclusion: "
                     f"{ctype.keys[key]}).")
        if ctype.validate is not None:
            ctype.validate(parameters, source, where)
        specs.append(ConclusionSpec(kind, parameters, where))
    return tuple(specs)


def quantity_error(value: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
    """The error estimate of a quantity computed on a trajectory: ``|q(run) − q(reference)|``
    plus 4 ulp of ``|q|`` for the rounding of the stored values; ``inf`` without a reference.

    >>> [round(float(e), 12) for e in quantity_error(np.array([1.0, 2.0]), np.array([1.0, 2.5]))]
    [0.0, 0.5]
    """
    value = np.asarray(value, dtype=float)
    if reference is None:
        return np.full(value.shape, np.inf)
    return np.abs(value - np.asarray(reference, dtype=float)) \
        + 4 * np.finfo(float).eps * np.abs(value)
