r"""Proved on this instance: enclosures, trapping lemmas and certificates put together.

:func:`prove_result` upgrades an instance's estimate-based verdict to **proved on this instance
(for all t ≥ 0)** when a rigorous enclosure up to some :math:`t_1`
(:mod:`verify.enclosure`) and a trapping lemma at :math:`t_1` (:mod:`verify.lemmas`) prove every
conclusion of the claim, writing a certificate that the independent checker
(``verify certificate FILE``) re-verifies. :func:`certify_masked` proves or refutes with the
closed form of a token closed under a causal mask (no enclosure); :func:`certify_drift` refutes
"every rescaled token converges" for a good triple whose follower drifts along its hyperplane
(an enclosure, then lemma ``hyperplane-drift``). :func:`write_certificate`
stores a run's certificates as files.
"""

from verify.proof._drift import certify_drift
from verify.proof._files import CERTIFICATE_FOLDER, write_certificate
from verify.proof._masked import certify_masked
from verify.proof._prove import (
    MARK_STEP,
    PROOF_SECONDS,
    proof_budget,
    prove_result,
)

__all__ = ["prove_result", "certify_masked", "certify_drift", "proof_budget", "write_certificate",
           "CERTIFICATE_FOLDER", "PROOF_SECONDS", "MARK_STEP"]
