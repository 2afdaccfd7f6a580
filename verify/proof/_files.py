"""Certificate files: a proved instance's certificate document moves from the result record to
``<run>/certificates/<claim>-<family>-<k>.json`` (written atomically, like every file of a
run), and the result keeps its path; a companion document (a lemma checked beside the proof on
the same enclosure, e.g. the followers' drift after a good-triple proof) goes to
``<claim>-<family>-<k>-<lemma>.json`` the same way."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from verify.atomic import write_atomic
from verify.judge._verdicts import InstanceResult

__all__ = ["write_certificate", "CERTIFICATE_FOLDER"]

CERTIFICATE_FOLDER = "certificates"


def write_certificate(record: dict, out_dir: str | Path) -> dict:
    """Write the certificate of ``record`` (a run's instance record) as a file, if it has one,
    and return the record with ``result.certificate["file"]`` instead of the document."""
    result = InstanceResult.from_json(record["result"])
    certificate = result.certificate
    if not certificate or "document" not in certificate:
        return record
    folder = Path(out_dir) / CERTIFICATE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{record['claim']}-{record['family']}-{record['k']}"
    name = f"{stem}.json"
    write_atomic(folder / name, json.dumps(certificate["document"], indent=1, sort_keys=True))
    kept = {k: v for k, v in certificate.items() if k != "document"}
    if certificate.get("companions"):
        kept["companions"] = []
        for companion in certificate["companions"]:
            other = f"{stem}-{companion['lemma']}.json"
            write_atomic(folder / other, json.dumps(companion["document"], indent=1,
                                                    sort_keys=True))
            kept["companions"].append({"lemma": companion["lemma"],
                                       "file": f"{CERTIFICATE_FOLDER}/{other}"})
    record["result"] = replace(result, certificate={**kept, "file": f"{CERTIFICATE_FOLDER}/{name}"}
                               ).to_json()
    return record
