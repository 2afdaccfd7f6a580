"""The results store of a run: ``run.json`` (parameters) and ``instances.jsonl`` (one line per
finished instance, appended and flushed as each one finishes, so nothing finished is lost).

A line is the record of :func:`verify.run._tasks.run_task` (keyed ``"<claim>/<family>#<k>"``).
A resumed run reads the lines back and skips every key whose claim file is unchanged (same
SHA-256); a truncated last line (a run killed while writing) is removed and recomputed.

Examples
--------
>>> import tempfile
>>> store = ResultStore(tempfile.mkdtemp())
>>> store.append({"key": "c/f#0", "claim_sha256": "ab", "result": {}})
>>> list(ResultStore(store.directory).load())
['c/f#0']
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from verify.errors import InvalidArgument

__all__ = ["ResultStore", "INSTANCES_FILE", "RUN_FILE"]

INSTANCES_FILE = "instances.jsonl"
RUN_FILE = "run.json"


class ResultStore:
    """Append-only store of instance records in ``directory``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / INSTANCES_FILE

    def load(self) -> dict[str, dict]:
        """Every stored record by key (a later line for the same key wins)."""
        records: dict[str, dict] = {}
        if not self.path.exists():
            return records
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):  # interrupted while writing: dropped, recomputed
                    self._truncate(lines[:-1])
                    continue
                raise InvalidArgument(f"{self.path}: line {number} is not JSON; the store is "
                                      "damaged (delete that line to resume).") from None
            records[record["key"]] = record
        return records

    def _truncate(self, lines: list[str]) -> None:
        tmp = self.path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp, self.path)

    def append(self, record: dict) -> None:
        """Write one record as a line, flushed to disk before returning."""
        line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def read_run(self) -> dict | None:
        """The stored ``run.json`` (parameters of the run), or ``None``."""
        path = self.directory / RUN_FILE
        if not path.exists():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def write_run(self, data: dict) -> None:
        """Write ``run.json`` atomically."""
        path = self.directory / RUN_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
