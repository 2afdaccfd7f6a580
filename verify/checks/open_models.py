"""Checks (see verify.checks): the MLP and several-heads open problems."""

from verify.claim import register_check  # noqa: F401
