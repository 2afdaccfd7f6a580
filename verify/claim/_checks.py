"""The registry of numerical checks named by claim files (``check = "..."``).

A claim file names its check; the check's module registers it with :func:`register_check`.
The runner calls it once per in-scope instance with a :class:`CheckRequest` and stores the
returned :class:`~verify.claim.InstanceResult` (build it with
:func:`~verify.claim.judge_instance` / :func:`~verify.claim.judge_comparison`).  For a
violation the runner calls it again with ``recheck=True``, a higher ``precision`` and a longer
``horizon``, and records the outcome with :func:`~verify.claim.recheck_record`.

Examples
--------
>>> @register_check("doc_example_always_holds")
... def _always(request):
...     return None
>>> get_check("doc_example_always_holds") is _always
True
>>> del CHECKS["doc_example_always_holds"]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from verify.claim._plain import suggest
from verify.errors import InvalidArgument

__all__ = ["CHECKS", "CHECK_NAME_RE", "CheckRequest", "register_check", "get_check"]

CHECK_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
CHECKS: dict[str, Callable] = {}


@dataclass(frozen=True)
class CheckRequest:
    """Everything a check needs for one instance.

    Attributes
    ----------
    claim : Claim
    family : Family
    instance : verify.model.Instance
    seed : int or None
    horizon : Fraction
        The family's horizon, or the run's override, or the longer re-check horizon.
    checkpoints : int, tuple or None
    precision : "float64", "auto" or int (digits)
    parameters : dict
        The claim's ``parameters`` table (exact numbers as Fractions).
    recheck : bool
        True when re-running a violation at higher precision and a longer horizon.
    """

    claim: object
    family: object
    instance: object
    seed: int | None
    horizon: Fraction
    checkpoints: object
    precision: object
    parameters: dict = field(default_factory=dict)
    recheck: bool = False


def register_check(name: str) -> Callable[[Callable], Callable]:
    """Decorator registering ``function(request: CheckRequest) -> InstanceResult`` as ``name``.

    Raises
    ------
    InvalidArgument
        If ``name`` is not an identifier (dots allowed) or is taken by another function.
    """
    if not isinstance(name, str) or not CHECK_NAME_RE.match(name):
        raise InvalidArgument(f"name={name!r} must be an identifier such as 'polytope_limit' "
                              "(letters, digits, underscores; dots to namespace).")

    def decorator(function: Callable) -> Callable:
        if CHECKS.get(name, function) is not function:
            raise InvalidArgument(f"check {name!r} is already registered by "
                                  f"{CHECKS[name].__module__}; pick another name.")
        CHECKS[name] = function
        return function

    return decorator


def get_check(name: str) -> Callable:
    """The registered check ``name``, or an :class:`InvalidArgument` with a suggestion."""
    if name not in CHECKS:
        known = ", ".join(sorted(CHECKS)) or "none registered yet"
        raise InvalidArgument(f"check={name!r} is not registered.{suggest(name, CHECKS)} "
                              f"Known checks: {known}.")
    return CHECKS[name]
