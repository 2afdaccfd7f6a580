"""The result of a simulation: checkpoints, tokens, scores, attention, precision, error estimate.

A :class:`Trajectory` holds, at each checkpoint time ``t_k``:

``state``
    the integrated variable (``z`` for the rescaled form, ``x`` otherwise), ``(m, n, d)`` float64
    — and, for an arbitrary-precision run, ``state_text``: every entry as a decimal string with
    all the working digits (the lossless record);
``scaled_scores``, ``log_scale``
    the scores ``S = e^{L} S̃`` (``S̃`` rounded once from the working precision);
``attention``
    the attention matrix ``P(t_k)`` (``A`` for hardmax/unnormalised attention);
``margins``
    per token, the gap between its largest and second largest scaled score (decides hardmax);
``score_error``, ``margin_error``
    ``|S̃ − S̃_reference|`` per entry and ``|margin − margin_reference|`` per token;
``error``, ``digits``
    the error estimate: per checkpoint and token, ``max_c |state − reference|`` against a re-run at
    tighter tolerance and higher precision, and the number of decimal digits that agree;
``repeated_error``
    per checkpoint, how far each exact token may be (Euclidean) from a state the *reference run*
    repeated after a certified consensus cap (:mod:`verify.flow.consensus_cap`): its chord widened
    by the state error (:func:`~verify.flow.simulate._cap_bounds`; also added to every entry's
    error, which it bounds), 0 before the reference's freeze; ``None`` when it never froze. A
    quantity's second route cannot see it (the reference repeats its state), so
    :func:`~verify.judge._quantities.quantity_series` adds it back;
``symmetry``
    the exact symmetry group used to keep the run on an invariant subspace, if any.
``continuation``
    (in ``stats``) where the run followed the certified hardmax in closed form, if it did.
``reference_run``
    the reference :class:`Trajectory` itself (in memory only, not saved): a quantity ``q`` of
    the run gets the error estimate ``|q(run) − q(reference_run)|`` by the same second route.
``resume_point``
    (in memory only) where the integration stopped, in the run's own arithmetic, with the
    certified leg it was on: what ``simulate(..., resume=trajectory)`` continues from; ``None``
    where the run cannot be continued (it failed, or a view such as :meth:`Trajectory.until`
    ends before its last state).

Saved losslessly with :meth:`Trajectory.save` (``.npz``: float arrays, decimal strings for high
precision, and a JSON header) and read back with :func:`load_trajectory`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

import numpy as np

from verify.atomic import atomic_path
from verify.errors import InvalidArgument
from verify.numerics import STORED_ULPS, ulps
from verify.numerics._coverage import estimate_bound

__all__ = ["Trajectory", "load_trajectory", "agreeing_digits", "token_array"]

FORMAT_VERSION = 1


def agreeing_digits(error: np.ndarray, scale: np.ndarray, cap: float = 99.0) -> np.ndarray:
    """Decimal digits that agree: ``-log10(error / scale)`` (``cap`` where the error is 0).

    >>> agreeing_digits(np.array([1e-12, 0.0]), np.array([1.0, 1.0]))
    array([12., 99.])
    """
    error = np.asarray(error, dtype=float)
    scale = np.maximum(np.asarray(scale, dtype=float), np.finfo(float).tiny)
    with np.errstate(divide="ignore"):
        digits = -np.log10(error / scale)
    return np.clip(np.where(error == 0, cap, digits), -cap, cap)


@dataclass
class Trajectory:
    """A simulated trajectory; see the module docstring for the fields."""

    times: list[Fraction]
    form: str
    state: np.ndarray
    scaled_scores: np.ndarray
    log_scale: np.ndarray
    attention: np.ndarray
    margins: np.ndarray
    precision: dict
    tolerances: dict
    model: dict
    status: str = "success"
    message: str = ""
    stats: dict = field(default_factory=dict)
    state_text: np.ndarray | None = None
    error: np.ndarray | None = None
    entry_error: np.ndarray | None = None
    margin_error: np.ndarray | None = None
    score_error: np.ndarray | None = None
    repeated_error: np.ndarray | None = None
    reference: dict | None = None
    symmetry: dict | None = None
    x_state: np.ndarray | None = None
    z_state: np.ndarray | None = None
    reference_run: Trajectory | None = field(default=None, repr=False, compare=False)
    resume_point: object = field(default=None, repr=False, compare=False)

    # -- views ---------------------------------------------------------------------------------
    @property
    def t(self) -> np.ndarray:
        """Checkpoint times as float64."""
        return np.array([float(v) for v in self.times])

    @property
    def n(self) -> int:
        return self.state.shape[1]

    @property
    def d(self) -> int:
        return self.state.shape[2]

    @property
    def success(self) -> bool:
        return self.status == "success"

    @property
    def rescaled(self) -> bool:
        """The run integrated the rescaled tokens ``z`` (its model's ``form`` is ``"z"``; a
        trajectory keeps the form as a string, so that a saved run reads back without its
        model)."""
        return self.form == "z"

    @property
    def z(self) -> np.ndarray | None:
        """Rescaled tokens ``z(t_k)`` (``None`` where the variant has no rescaled form)."""
        return self.state if self.rescaled else self.z_state

    @property
    def x(self) -> np.ndarray | None:
        """Tokens ``x(t_k)`` (entries may be ``inf`` when ``e^{tV}`` overflows float64)."""
        return self.state if not self.rescaled else self.x_state

    def tokens(self, variable: str) -> np.ndarray:
        """The array of ``variable`` (``"z"`` or ``"x"``), shape ``(m, n, d)``.

        Raises
        ------
        InvalidArgument
            For another name, or when the variant has no such array (several heads,
            normalisation or an MLP have no rescaled ``z``).
        """
        if variable not in ("z", "x"):
            raise InvalidArgument(f"variable={variable!r} ({type(variable).__name__}) must be "
                                  "'z' (rescaled tokens) or 'x' (tokens).")
        values = getattr(self, variable)
        if values is None:
            raise InvalidArgument(f"variable={variable!r}: this trajectory (form={self.form!r}) "
                                  "has no such array; use variable='x' or simulate in form 'z'.")
        return values

    @property
    def digits(self) -> np.ndarray | None:
        """Per checkpoint, the decimal digits on which the run and its reference agree
        (relative to the size of the state at that checkpoint)."""
        if self.error is None:
            return None
        scale = np.max(np.abs(self.state), axis=(1, 2))
        return agreeing_digits(np.max(self.error, axis=1), scale)

    @property
    def digits_per_entry(self) -> np.ndarray | None:
        """Per checkpoint, token and coordinate, the decimal digits on which the run and its
        reference agree relative to that entry's own size: a small coordinate can have fewer
        correct digits than the normwise :attr:`digits` says."""
        if self.entry_error is None:
            return None
        return agreeing_digits(self.entry_error, np.abs(np.asarray(self.state, dtype=float)))

    @property
    def continuation(self) -> dict | None:
        """Where the run stopped integrating on a certificate: ``t_switch`` (first switch time
        or ``None``), the ``legs`` and the ``fallbacks`` to integration; ``None`` when the run
        could not use one. A leg of ``kind`` ``"hardmax"`` (:mod:`verify.flow.continuation`) has its
        start ``t0``, last checked time, leaders, checks, smallest log scaled margin, assumed
        and seen state error; one of ``kind`` ``"cap"`` (:mod:`verify.flow.consensus_cap`) its start
        and the chord ``bound`` added to the error estimate after it."""
        return self.stats.get("continuation") if self.stats else None

    @property
    def error_estimate(self) -> float | None:
        """Largest estimated absolute error over all checkpoints and tokens."""
        return None if self.error is None else float(np.max(self.error))

    def score_radius(self, k: int = -1) -> np.ndarray | float:
        """The error bound used to certify facts of ``scaled_scores[k]`` (the hardmax graph,
        the leader map): the difference with the reference run times the measured safety
        factor (:func:`verify.numerics.estimate_bound`: an estimate is not a bound until its
        coverage is measured) plus the rounding of the stored float64 values (4 ulp of the
        largest score)."""
        rounding = ulps(STORED_ULPS, float(np.max(np.abs(self.scaled_scores[k]))))
        if self.score_error is None:
            return np.inf
        return estimate_bound(self.score_error[k]) + rounding

    def summary(self) -> dict:
        """Plain data describing the run (what ``verify simulate --json`` prints, less arrays)."""
        digits = self.digits
        return {
            "status": self.status,
            "message": self.message,
            "form": self.form,
            "horizon": str(self.times[-1]),
            "checkpoints": len(self.times),
            "precision": self.precision,
            "tolerances": self.tolerances,
            "stats": self.stats,
            "error_estimate": self.error_estimate,
            "min_agreeing_digits": None if digits is None else float(np.min(digits)),
            "min_digits_per_entry": None if self.digits_per_entry is None
            else float(np.min(self.digits_per_entry)),
            "reference": self.reference,
            "symmetry": self.symmetry,
        }

    def until(self, time: object) -> Trajectory:
        """The same run restricted to the checkpoints ``t ≤ time`` (arrays sliced, the reference
        run too): what a run stopped at ``time`` would have recorded.

        >>> from verify.model import Instance, Model
        >>> from verify.flow.simulate import simulate
        >>> traj = simulate(Instance(Model(V=[[1]]), [[1], [2]]), 2, checkpoints=5)
        >>> [str(t) for t in traj.until(1).times], traj.until(1).reference_run.state.shape[0]
        (['0', '1/2', '1'], 3)
        """
        m = sum(1 for t in self.times if t <= Fraction(time))
        if m == len(self.times):
            return self
        return self.at(self.times[:m])

    def at(self, times: list) -> Trajectory:
        """The same run recorded at a subset ``times`` of its checkpoints only (arrays taken at
        those checkpoints, the reference run too); it can be resumed only if it keeps the last.

        >>> from verify.model import Instance, Model
        >>> from verify.flow.simulate import simulate
        >>> traj = simulate(Instance(Model(V=[[1]]), [[1], [2]]), 2, checkpoints=5)
        >>> [str(t) for t in traj.at([0, 1, 2]).times], traj.at([0, 1, 2]).error.shape[0]
        (['0', '1', '2'], 3)
        """
        index = {t: k for k, t in enumerate(self.times)}
        keep = [index[Fraction(t)] for t in times]
        if keep == list(range(len(self.times))):
            return self
        picked = {}
        for name in ("state", "scaled_scores", "log_scale", "attention", "margins", "state_text",
                     "error", "entry_error", "margin_error", "score_error", "repeated_error",
                     "x_state", "z_state"):
            value = getattr(self, name)
            picked[name] = None if value is None else value[keep]
        ref = None if self.reference_run is None else self.reference_run.at(times)
        ends = keep[-1] == len(self.times) - 1
        return replace(self, times=[self.times[k] for k in keep], reference_run=ref,
                       resume_point=self.resume_point if ends else None, **picked)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trajectory to ``path`` (``.npz``); returns the path written."""
        path = Path(path)
        if path.suffix != ".npz":
            raise InvalidArgument(f"path={str(path)!r}: trajectories are saved as .npz files.")
        header = {
            "format_version": FORMAT_VERSION,
            "times": [str(v) for v in self.times],
            "form": self.form,
            "precision": self.precision,
            "tolerances": self.tolerances,
            "model": self.model,
            "status": self.status,
            "message": self.message,
            "stats": self.stats,
            "reference": self.reference,
            "symmetry": self.symmetry,
        }
        arrays = {"header": np.array(json.dumps(header))}
        for name in ("state", "scaled_scores", "log_scale", "attention", "margins", "error",
                     "entry_error", "margin_error", "score_error", "repeated_error", "x_state",
                     "z_state", "state_text"):
            value = getattr(self, name)
            if value is not None:
                arrays[name] = value
        with atomic_path(path) as tmp:  # a second Ctrl-C never leaves a corrupt file
            np.savez_compressed(tmp, **arrays)
        return path


def load_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory written by :meth:`Trajectory.save`."""
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"Cannot read a trajectory from {str(path)!r}: {exc}") from None
    with data:
        header = json.loads(str(data["header"]))
        if header.get("format_version") != FORMAT_VERSION:
            raise InvalidArgument(
                f"{str(path)!r} has trajectory format {header.get('format_version')}; this "
                f"version of verify reads format {FORMAT_VERSION}."
            )
        arrays = {name: data[name] for name in data.files if name != "header"}
    return Trajectory(
        times=[Fraction(v) for v in header["times"]],
        form=header["form"],
        precision=header["precision"],
        tolerances=header["tolerances"],
        model=header["model"],
        status=header["status"],
        message=header["message"],
        stats=header["stats"],
        reference=header["reference"],
        symmetry=header["symmetry"],
        **arrays,
    )


def token_array(trajectory, variable: str) -> np.ndarray:
    """The tokens ``(m, n, d)`` of ``variable``: ``z``, ``x`` or ``direction`` (``x/|x|``)."""
    if variable == "direction":
        x = np.asarray(trajectory.tokens("x"), dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return x / np.linalg.norm(x, axis=2, keepdims=True)
    return np.asarray(trajectory.tokens(variable), dtype=float)
