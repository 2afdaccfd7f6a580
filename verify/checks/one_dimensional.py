"""Checks (see verify.checks)."""

from verify.claim import register_check  # noqa: F401
