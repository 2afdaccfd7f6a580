"""Shared by the tamper tests of the lemma certificates (tests/test_certificates.py,
test_hyperplane_drift.py, test_masked_*.py, test_power_decay.py): change a copy of a
certificate document and re-check it with the independent checker."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from flint import arb

from verify.cli import main
from verify.lemmas import check_certificate
from verify.lemmas._balls import ball_text, parse_ball


def tampered(document: dict, change):
    """``check_certificate`` of a deep copy of ``document`` after ``change(copy)``."""
    data = copy.deepcopy(document)
    change(data)
    return check_certificate(data)


def shifted_ball(text: str, by: str, widen: bool = False) -> str:
    """The ball ``text`` moved by ``by`` (or, with ``widen``, its radius set to ``by``)."""
    ball = parse_ball(text)
    return ball_text(arb(ball.mid(), arb(by)) if widen else ball + arb(by))


def assert_accepted(document: dict, folder: Path) -> None:
    """The checker finds ``document`` valid, and ``verify certificate`` accepts it as a file."""
    assert check_certificate(document).valid
    path = folder / "certificate.json"
    path.write_text(json.dumps(document))
    assert main(["certificate", str(path)]) == 0
