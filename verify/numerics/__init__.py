"""Numerics: arithmetic backends, integrators with error control, precision choice."""

from verify.numerics._backends import Arb, Backend, Float64, bits_to_digits, digits_to_bits

__all__ = ["Backend", "Float64", "Arb", "digits_to_bits", "bits_to_digits"]
