r"""Claims as files: the :class:`Claim` type and the TOML loader with validation.

One claim per file (format: ``claims/_format.md``).  TOML floats are read as exact decimals
(``0.1`` means one tenth).  Every problem raises :class:`~verify.errors.InvalidArgument` as
``"<file>: <field>: <problem>"`` with a dotted field path such as ``families[1].V`` (0-based)
and a "did you mean" for unknown keys, hypotheses, kinds and generators.

Examples
--------
>>> claim = parse_claim({"id": "toy", "label": "Remark 0", "kind": "remark",
...     "statement": "$V = I$.", "hypotheses": ["is_identity"],
...     "conclusion": {"type": "consensus"}, "expected": "holds",
...     "families": [{"name": "one", "kind": "explicit", "V": [[1]], "x0": [[1], [2]],
...     "horizon": 1}]}, "<doc>")
>>> claim.id, claim.kind, [f.name for f in claim.families], [c.type for c in claim.conclusions]
('toy', <ClaimKind.REMARK: 'remark'>, ['one'], ['consensus'])
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from pathlib import Path

import verify.judge  # noqa: F401  (registers the conclusions and predictions a file names)
from verify.claim._family import Family
from verify.claim._family_file import parse_family
from verify.errors import InvalidArgument
from verify.exact.plain import fail, suggest, to_plain
from verify.vocabulary.conclusions import parse_conclusions
from verify.vocabulary.hypothesis_expressions import check_hypothesis

__all__ = ["ClaimKind", "Expectation", "Claim", "CLAIM_KEYS", "parse_claim", "load_claim",
           "load_claims", "read_toml", "exact_parameters"]

ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
CLAIM_KEYS = ("id", "label", "kind", "statement", "hypotheses", "uses", "families",
              "conclusion", "parameters", "expected", "notes")
REQUIRED = ("id", "label", "kind", "statement", "families", "conclusion", "expected")


class ClaimKind(StrEnum):
    """What the paper calls the statement."""

    THEOREM = "theorem"
    LEMMA = "lemma"
    PROPOSITION = "proposition"
    REMARK = "remark"
    CONJECTURE = "conjecture"
    OPEN_PROBLEM = "open-problem"
    PROOF_STEP = "proof-step"


class Expectation(StrEnum):
    """What the claim file expects: used for the exit code and the report, never for a verdict.

    ``holds`` (the paper asserts it), ``fails`` (known to be false, e.g. a gap in a proof),
    ``open`` (a conjecture or an open problem)."""

    HOLDS = "holds"
    FAILS = "fails"
    OPEN = "open"


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or a user's conjecture), as read from its file.

    Attributes
    ----------
    id : str
        Stable kebab-case id (``"polytope"``).
    label : str
        The paper's number (``"Theorem 3.1"``), which changed between arXiv versions.
    kind : ClaimKind
    statement : str
        Markdown with LaTeX.
    hypotheses : tuple of str
        Names in :data:`verify.claim.HYPOTHESES`; an instance is in scope iff all hold.
    uses : tuple of str
        Ids of the claims it relies on.
    families : tuple of Family
    conclusions : tuple of ConclusionSpec
        What the claim concludes, in the vocabulary of :data:`verify.claim.CONCLUSIONS`
        (``[[conclusion]]`` tables); all must hold.
    parameters : dict
        Run options (``max_horizon``) and notes for the report (exact numbers as Fractions).
    expected : Expectation
    source : str
        Path of the file.
    sha256 : str
        Hash of the file's bytes.
    notes : str
    """

    id: str
    label: str
    kind: ClaimKind
    statement: str
    hypotheses: tuple[str, ...]
    uses: tuple[str, ...]
    families: tuple[Family, ...]
    conclusions: tuple
    parameters: dict = field(default_factory=dict)
    expected: Expectation = Expectation.HOLDS
    source: str = ""
    sha256: str = ""
    notes: str = ""

    @property
    def evidence_only(self) -> bool:
        """True for conjectures and open problems: they can be supported by evidence only."""
        return self.kind in (ClaimKind.CONJECTURE, ClaimKind.OPEN_PROBLEM)

    def family(self, name: str) -> Family:
        """The family called ``name``."""
        for fam in self.families:
            if fam.name == name:
                return fam
        names = [f.name for f in self.families]
        raise InvalidArgument(f"claim {self.id!r} has no family {name!r}.{suggest(name, names)} "
                              f"Families: {', '.join(names)}.")

    def to_json(self) -> dict:
        """The claim's metadata as a plain dict (exact numbers as ``"p/q"`` strings)."""
        return {"id": self.id, "label": self.label, "kind": self.kind.value,
                "statement": self.statement, "hypotheses": list(self.hypotheses),
                "uses": list(self.uses), "families": [f.to_json() for f in self.families],
                "conclusion": [c.to_json() for c in self.conclusions],
                "parameters": to_plain(self.parameters),
                "expected": self.expected.value, "source": self.source, "sha256": self.sha256,
                "notes": self.notes}

    @classmethod
    def from_json(cls, data: dict) -> Claim:
        """Inverse of :meth:`to_json` (parameters keep exact numbers as strings)."""
        data = dict(data)
        source, sha = data.pop("source", "<json>"), data.pop("sha256", "")
        return parse_claim(data, source or "<json>", sha256=sha)


def _string(data, key, source, *, required: bool = True) -> str:
    value = data.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        fail(source, key, f"{value!r} must be a{' non-empty' if required else ''} string.")
    bad = [c for c in value if c in "\t\b\f"]
    if bad:
        fail(source, key, f"contains the control character {bad[0]!r}: a LaTeX command such as "
             "\\top, \\frac or \\beta in a \"...\" string is read as a TOML escape; write the "
             "text in a literal string '''...'''.")
    return value.strip()


def _names(data, key, source, pattern=None) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        fail(source, key, f"{value!r} must be a list of strings.")
    for i, name in enumerate(value):
        if pattern is not None and not pattern.match(name):
            fail(source, f"{key}[{i}]", f"{name!r} must be a kebab-case claim id.")
        if value.index(name) != i:
            fail(source, f"{key}[{i}]", f"{name!r} is listed twice.")
    return tuple(value)


def exact_parameters(value, where: str, source: str):
    """``value`` (a TOML value) with every decimal read as the exact Fraction it denotes."""
    if isinstance(value, Decimal):
        if not value.is_finite():
            fail(source, where, f"{value} is not finite.")
        return Fraction(value)
    if isinstance(value, dict):
        return {k: exact_parameters(v, f"{where}.{k}", source) for k, v in value.items()}
    if isinstance(value, list):
        return [exact_parameters(v, f"{where}[{i}]", source) for i, v in enumerate(value)]
    if isinstance(value, (str, int, bool, Fraction)):
        return value
    fail(source, where, f"{value!r} ({type(value).__name__}) is not allowed; use numbers, "
         "strings, booleans, lists and tables.")


def parse_claim(data: dict, source: str, *, sha256: str = "",
                allow_no_families: bool = False) -> Claim:
    """Validate a parsed claim table (``source`` names it in errors).  ``allow_no_families``:
    an empty ``families`` array is accepted (a conjecture whose instances come from a
    search)."""
    for key in data:
        if key not in CLAIM_KEYS:
            fail(source, key, f"unknown field {key!r}.{suggest(key, CLAIM_KEYS)} Known fields: "
                 f"{', '.join(CLAIM_KEYS)}.")
    for key in REQUIRED:
        if key not in data:
            fail(source, key, "missing (required).")
    claim_id = data["id"]
    if not isinstance(claim_id, str) or not ID_RE.match(claim_id):
        fail(source, "id", f"{claim_id!r} must be kebab-case, e.g. 'polytope-subspace'.")
    kind = data["kind"]
    if kind not in [k.value for k in ClaimKind]:
        fail(source, "kind", f"unknown kind {kind!r}.{suggest(kind, [k.value for k in ClaimKind])}"
             f" Known kinds: {', '.join(k.value for k in ClaimKind)}.")
    expected = data["expected"]
    if expected not in [e.value for e in Expectation]:
        fail(source, "expected", f"{expected!r} must be 'holds', 'fails' or 'open'."
             f"{suggest(expected, [e.value for e in Expectation])}")
    hypotheses = _names(data, "hypotheses", source)
    for i, name in enumerate(hypotheses):
        check_hypothesis(name, source, f"hypotheses[{i}]")
    uses = _names(data, "uses", source, ID_RE)
    if claim_id in uses:
        fail(source, "uses", f"the claim {claim_id!r} cannot use itself.")
    conclusions = parse_conclusions(exact_parameters(data["conclusion"], "conclusion", source),
                                    source)
    parameters = data.get("parameters", {})
    if not isinstance(parameters, dict):
        fail(source, "parameters", "must be a table.")
    parameters = exact_parameters(parameters, "parameters", source)
    if "max_horizon" in parameters:
        value = parameters["max_horizon"]
        if isinstance(value, bool) or not isinstance(value, (int, Fraction)) or value <= 0:
            fail(source, "parameters.max_horizon", f"{value!r} must be a positive number (the "
                 "longest horizon a run may be extended to).")
    families = data["families"]
    if not isinstance(families, list) or not (families or allow_no_families):
        fail(source, "families", "must be a non-empty array of tables [[families]].")
    parsed = tuple(parse_family(table, i, source) for i, table in enumerate(families))
    names = [f.name for f in parsed]
    for i, name in enumerate(names):
        if names.index(name) != i:
            fail(source, f"families[{i}].name", f"{name!r} is used by families[{names.index(name)}]"
                 " too; family names must be unique within a claim.")
    return Claim(claim_id, _string(data, "label", source), ClaimKind(kind),
                 _string(data, "statement", source), hypotheses, uses, parsed,
                 conclusions, parameters, Expectation(expected), source, sha256,
                 _string(data, "notes", source, required=False))


def read_toml(path: str | Path, what: str = "claim file") -> tuple[dict, str]:
    """The table of the TOML file ``path`` (floats read as exact decimals) and the SHA-256 of
    its bytes; unreadable, non-UTF-8 or invalid TOML raises :class:`InvalidArgument`."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"{path}: cannot read the {what} ({exc.strerror}); check the "
                              "path.") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"), parse_float=Decimal)
    except UnicodeDecodeError as exc:
        fail(str(path), "", f"not UTF-8 text ({exc.reason} at byte {exc.start}).")
    except tomllib.TOMLDecodeError as exc:
        hint = (" (LaTeX backslashes belong in literal strings '''...''')"
                if "escape" in str(exc).lower() or "\\" in str(exc) else "")
        fail(str(path), "", f"not valid TOML: {exc}{hint}.")
    return data, hashlib.sha256(raw).hexdigest()


def load_claim(path: str | Path) -> Claim:
    """Read and validate one claim file."""
    data, sha = read_toml(path)
    return parse_claim(data, str(path), sha256=sha)


def load_claims(directory: str | Path) -> list[Claim]:
    """Every ``*.toml`` claim directly in ``directory`` (not in subdirectories; names starting
    with ``_`` skipped), sorted by id.  Ids must be unique, ``uses`` must name loaded claims and
    the dependencies must not form a cycle."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InvalidArgument(f"directory={str(directory)!r} is not a directory of claim files.")
    claims = [load_claim(p) for p in sorted(directory.glob("*.toml"))
              if not p.name.startswith("_")]
    by_id: dict[str, Claim] = {}
    for claim in claims:
        if claim.id in by_id:
            fail(claim.source, "id", f"{claim.id!r} is also the id of {by_id[claim.id].source}; "
                 "ids must be unique.")
        by_id[claim.id] = claim
    for claim in claims:
        for i, used in enumerate(claim.uses):
            if used not in by_id:
                fail(claim.source, f"uses[{i}]", f"unknown claim {used!r}.{suggest(used, by_id)}")
    state: dict[str, int] = {}

    def visit(cid: str, path: list[str]) -> None:
        if state.get(cid) == 2:
            return
        if state.get(cid) == 1:
            cycle = path[path.index(cid):] + [cid]
            fail(by_id[cid].source, "uses", f"the claims depend on each other in a cycle: "
                 f"{' -> '.join(cycle)}.")
        state[cid] = 1
        for used in by_id[cid].uses:
            visit(used, path + [cid])
        state[cid] = 2

    for cid in sorted(by_id):
        visit(cid, [])
    return sorted(claims, key=lambda c: c.id)
