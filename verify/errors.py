"""The exceptions `verify` raises.

One root, :class:`VerifyError`; bad input raises :class:`InvalidArgument`, which is also a
``ValueError`` so that callers who catch the standard exception keep working.  Messages follow
one pattern: *name=value (type), the rule, the fix*.
"""

__all__ = ["VerifyError", "InvalidArgument", "IntegrationError"]


class VerifyError(Exception):
    """Root of every exception raised on purpose by `verify`."""


class InvalidArgument(VerifyError, ValueError):
    """An argument, a matrix or a file field breaks a documented rule."""


class IntegrationError(VerifyError, RuntimeError):
    """An integration could not reach its horizon (raised only when ``throw=True``)."""
