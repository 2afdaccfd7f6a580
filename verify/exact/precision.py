"""The one scoped setting of FLINT's working precision (``flint.ctx.prec`` is global).

Examples
--------
>>> from flint import ctx
>>> before = ctx.prec
>>> with working_precision(200):
...     ctx.prec
200
>>> ctx.prec == before
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["working_precision"]


@contextmanager
def working_precision(bits: int) -> Iterator[None]:
    """Set ``flint.ctx.prec`` to ``bits`` inside the block and restore it on exit."""
    from flint import ctx

    old = ctx.prec
    ctx.prec = int(bits)
    try:
        yield
    finally:
        ctx.prec = old
