"""What the engine judges: one claim on one instance (:class:`CheckRequest`).

The runner builds one request per instance (:mod:`verify.run`) and hands it to
:func:`verify.judge.judge_request`; the re-check of a violation is another request at a higher
precision and a longer horizon.

Examples
--------
>>> from types import SimpleNamespace
>>> r = CheckRequest(SimpleNamespace(id="toy"), SimpleNamespace(name="f"), None, 0, 4, 9,
...                  "float64")
>>> r.horizon, r.parameters
(4, {})
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["CheckRequest"]


@dataclass(frozen=True)
class CheckRequest:
    """Everything the engine needs for one instance.

    Attributes
    ----------
    claim : Claim
    family : Family
        Or anything with a ``name`` (the search's and the shrinker's stand-ins).
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
