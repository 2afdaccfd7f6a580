"""The exceptions `verify` raises.

One root, :class:`VerifyError`; bad input raises :class:`InvalidArgument`, which is also a
``ValueError`` so that callers who catch the standard exception keep working.  Messages follow
one pattern: *name=value (type), the rule, the fix*.
"""

__all__ = ["VerifyError", "InvalidArgument", "IntegrationError", "UserFunctionError",
           "OutOfScope", "Interrupted"]


class VerifyError(Exception):
    """Root of every exception raised on purpose by `verify`."""


class InvalidArgument(VerifyError, ValueError):
    """An argument, a matrix or a file field breaks a documented rule."""


class UserFunctionError(VerifyError, TypeError):
    """A function named in a claim file (a ``predicate`` conclusion) breaks its documented
    contract, e.g. returns ``"yes"``: a usage error of the file, raised through the runner
    rather than turned into an inconclusive verdict."""


class IntegrationError(VerifyError, RuntimeError):
    """An integration could not reach its horizon (raised only when ``throw=True``)."""


class OutOfScope(VerifyError):
    """An instance cannot be built because something it is made of is not installed (e.g. the
    real weights of ``verify weights``).  A claim runner records such an instance as
    *out of scope* with this message (never counted as support); a command that needs the
    thing reports it as a usage error."""


class Interrupted(KeyboardInterrupt):
    """A signal asked the command to stop (the CLI raises it on SIGTERM; SIGINT raises
    ``KeyboardInterrupt``).  ``signum`` is the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
