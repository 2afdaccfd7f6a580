r"""Conjecture files: a claim file written by a user anywhere on disk, plus what it concludes.

A conjecture file has the format of a claim file (``claims/_format.md``) with three additions:

* ``[conclusion]`` (or several ``[[conclusion]]``, all of which must hold): what is claimed, in
  the vocabulary of :mod:`verify.judge` (``type = "consensus"``, ``"clusters"``, ...), with the
  theorems' predictions of :mod:`verify.predict` (``to = { predict = "polytope-S" }``) — the
  same as a paper claim's;
* ``[search]``: the space of instances of a **universal** conjecture (see
  :mod:`verify.search`); without it, the conjecture is about its families' instances (a single
  explicit instance makes it a conjecture about *one instance*);
* defaults for a user's file: ``kind = "conjecture"``, ``label = "Conjecture"``,
  ``expected = "open"``; ``families`` may be omitted when ``[search]`` is given.

Every mistake is an :class:`~verify.errors.InvalidArgument` reading
``"<file>: <field>: <problem>"``.

Examples
--------
>>> c = parse_conjecture({"id": "toy", "statement": "Consensus.", "conclusion": {"type":
...     "consensus"}, "search": {"n": [2, 3], "d": [2, 2]}}, "toy.toml")
>>> c.claim.kind.value, c.universal, [s.type for s in c.conclusions]
('conjecture', True, ['consensus'])
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verify.claim import Claim, parse_claim
from verify.claim._claim import read_toml
from verify.exact.plain import fail
from verify.search import parse_search

__all__ = ["Conjecture", "parse_conjecture", "load_conjecture", "CONJECTURE_DEFAULTS"]

#: What a user's file may leave out.
CONJECTURE_DEFAULTS = {"kind": "conjecture", "label": "Conjecture", "expected": "open"}


@dataclass(frozen=True)
class Conjecture:
    """A parsed conjecture file.

    Attributes
    ----------
    claim : Claim
    conclusions : tuple of ConclusionSpec
        ``claim.conclusions``.
    search : SearchSpace or None
        The instance space of a universal conjecture.
    """

    claim: Claim
    conclusions: tuple
    search: object = None

    @property
    def universal(self) -> bool:
        """True when the conjecture is about a family (a search space or a random family)."""
        return self.search is not None or any(f.kind != "explicit" for f in self.claim.families)


def parse_conjecture(data: dict, source: str, *, sha256: str = "") -> Conjecture:
    """Validate a parsed conjecture table (``source`` names it in errors)."""

    data = dict(data)
    search_table = data.pop("search", None)
    for key, value in CONJECTURE_DEFAULTS.items():
        data.setdefault(key, value)
    if "conclusion" not in data:
        fail(source, "conclusion", "missing: say what the conjecture claims in a [conclusion] "
             "table (e.g. type = \"consensus\"); `verify check --help` lists the vocabulary.")
    if search_table is not None and not isinstance(search_table, dict):
        fail(source, "search", "must be a table [search].")
    if "families" not in data and search_table is not None:
        data["families"] = []
    claim = parse_claim(data, source, sha256=sha256, allow_no_families=search_table is not None)
    space = None if search_table is None else parse_search(search_table, source,
                                                           claim.hypotheses)
    return Conjecture(claim, claim.conclusions, space)


def load_conjecture(path: str | Path) -> Conjecture:
    """Read and validate a conjecture file (TOML; floats read as exact decimals)."""
    data, sha = read_toml(path, "conjecture file")
    return parse_conjecture(data, str(path), sha256=sha)
