"""Exact arithmetic: exact inputs, spectra, predicted limit objects."""

from verify.exact.inputs import as_float_array, format_rational, rational_array, to_rational

__all__ = ["to_rational", "rational_array", "as_float_array", "format_rational"]
