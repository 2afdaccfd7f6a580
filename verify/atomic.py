"""Atomic file writes: a file is either its old self or completely the new one, never a part.

Every report, cache, saved trajectory and counterexample is written to a temporary file in the
same folder, flushed to disk, then renamed over the target (``os.replace``, atomic on POSIX and
Windows). An interruption (Ctrl-C, ``kill -9``, a full disk) leaves the old file, or none, and
at most a hidden ``.<name>.*.tmp<suffix>`` that the next write does not read.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> target = Path(tempfile.mkdtemp()) / "report.md"
>>> write_atomic(target, "# Report\\n")
>>> target.read_text()
'# Report\\n'
>>> with atomic_path(target.with_suffix(".npz")) as tmp:
...     _ = tmp.write_bytes(b"PK")
>>> sorted(p.name for p in target.parent.iterdir())
['report.md', 'report.npz']
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["write_atomic", "atomic_path"]


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix) to write; on a normal exit it is flushed
    to disk and renamed to ``path``, on any exception (``KeyboardInterrupt`` too) removed."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}"
                           f".tmp{target.suffix}")
    open(tmp, "xb").close()  # created with the umask's mode, as the target would be
    try:
        yield tmp
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, target)
    except OSError as exc:  # e.g. a full disk: name the file meant, not the temporary one
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` (text in ``encoding``, or bytes) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding=encoding)
