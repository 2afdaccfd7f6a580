r"""Rigorous enclosures of the dynamics in ball arithmetic (python-flint ``arb``).

:class:`Enclosure` encloses the exact trajectory of a small instance (``n·d <= 64``) on
:math:`[0, t]`: the plain model in the token and the rescaled forms (any ``V``, ``QᵀK``,
``β``), tokens on the sphere (post-LN) with softmax or unnormalised attention, pre-LN, masks,
several heads. Each ball contains the exact solution; the theorem behind each step is stated in
:mod:`verify.enclosure._taylor`.
"""

from verify.enclosure._enclosure import DEFAULT_BITS, DEFAULT_ORDER, MAX_SIZE, Enclosure
from verify.enclosure._fields import unsupported
from verify.enclosure._taylor import Step, StepFailure, dyadic_ball

__all__ = ["Enclosure", "Step", "StepFailure", "unsupported", "dyadic_ball", "DEFAULT_BITS",
           "DEFAULT_ORDER", "MAX_SIZE"]
