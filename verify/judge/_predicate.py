r"""The escape hatch ``predicate``: a Python function of the trajectory decides the instance.

``function = "file.py:name"`` (relative to the conjecture file) or ``"package.module:name"``
is called as ``name(trajectory, instance)`` and returns a bool (decided only when the reference
run gives the same answer), a margin (error: its difference on the reference run) or a pair
``(margin, error)``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from numbers import Real
from pathlib import Path

import numpy as np

from verify.analysis.evidence import Basis
from verify.errors import InvalidArgument, UserFunctionError
from verify.exact.plain import fail
from verify.judge._decision import decide, inconclusive
from verify.predict._evaluation import quantity_error
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["load_function", "judge_predicate"]

# --------------------------------------------------------------------------- predicate
_LOADED: dict = {}


def _split(spec: object) -> tuple[str, str, bool] | None:
    """``(target, name, is_file)`` of ``"path/file.py:name"`` or ``"package.module:name"``."""
    if not isinstance(spec, str):
        return None
    target, _, name = spec.rpartition(":")
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    if not target or not name.isidentifier() or not is_file and not all(
            part.isidentifier() for part in target.split(".")):
        return None
    return target, name, is_file


def load_function(spec: str, source: str | None = None):
    """The callable named by ``"path/to/file.py:name"`` or ``"package.module:name"``.

    A relative path is taken from the directory of ``source`` (the conjecture file), or from
    the working directory without one. A file is loaded once per modification time.

    Raises
    ------
    InvalidArgument
        Malformed ``spec``, a missing file or module, a module that fails to import, or a name
        it does not define (the message lists the callables it does define).
    """
    parts = _split(spec)
    if parts is None:
        raise InvalidArgument(f"function={spec!r} ({type(spec).__name__}) must be "
                              "'path/to/file.py:name' or 'package.module:name'.")
    target, name, is_file = parts
    try:
        if is_file:
            path = Path(target)
            if not path.is_absolute():
                path = (Path(source).parent if source else Path.cwd()) / path
            if not path.is_file():
                where = f"the directory of {source}" if source else "the working directory"
                raise InvalidArgument(f"function={spec!r}: no file {path} (relative paths start "
                                      f"in {where}); fix the path.")
            key = (str(path.resolve()), path.stat().st_mtime_ns)
            if key not in _LOADED:
                module_name = f"_verify_predicate_{abs(hash(key))}"
                loader = importlib.util.spec_from_file_location(module_name, path)
                module = importlib.util.module_from_spec(loader)
                sys.modules[module_name] = module  # dataclasses and pickling look it up
                try:
                    loader.loader.exec_module(module)
                except BaseException:
                    del sys.modules[module_name]
                    raise
                _LOADED[key] = module
            module = _LOADED[key]
        else:
            module = importlib.import_module(target)
    except InvalidArgument:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module: report what went wrong
        raise InvalidArgument(f"function={spec!r}: {target} could not be loaded "
                              f"({type(exc).__name__}: {exc}).") from None
    function = getattr(module, name, None)
    if not callable(function):
        known = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise InvalidArgument(f"function={spec!r}: {target} defines no function {name!r}; it "
                              f"defines {', '.join(known) or 'no public callables'}.")
    return function


def _validate_predicate(p: dict, source: str, where: str) -> None:
    if _split(p.get("function")) is None:
        fail(source, f"{where}.function", f"{p.get('function')!r} must be "
             "'path/to/file.py:name' (relative to this file) or 'package.module:name'.")
    if not isinstance(p.get("final_state", False), bool):
        fail(source, f"{where}.final_state", f"{p['final_state']!r} must be true or false.")


def _classify(value) -> tuple[str, object]:
    if isinstance(value, (bool, np.bool_)):
        return "bool", bool(value)
    if isinstance(value, Real):
        return "number", float(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(
            isinstance(v, Real) and not isinstance(v, (bool, np.bool_)) for v in value):
        return "pair", (float(value[0]), float(value[1]))
    return "other", value


@register_conclusion(
    "predicate", asymptotic=False,
    summary="A Python function of the trajectory and the instance states the conclusion.",
    needs="the function evaluated on the run and on its reference run: a bool decides only when "
          "both agree (margin ±1, error 0); a number m is a margin with error |m(run) − "
          "m(reference)| + rounding; a pair (m, e) adds that difference to e.",
    keys={"function": "'path/to/file.py:name' (relative to the conjecture file) or "
                      "'package.module:name', called as function(trajectory, instance)",
          "final_state": "true if the predicate is about t → ∞ (then it is re-checked at a "
                         "longer horizon, and a violation counts only with a certificate — "
                         "which a predicate cannot give, so it stays inconclusive); default "
                         "false"},
    required=("function",), validate=_validate_predicate)
def judge_predicate(evaluation):
    """Judge ``predicate``. An error raised by loading or calling the function gives an
    inconclusive result quoting it; a value of the wrong type raises
    :class:`~verify.errors.UserFunctionError` (a usage error of the file)."""
    request, traj = evaluation.request, evaluation.trajectory
    spec = evaluation.parameters["function"]
    source = getattr(request.claim, "source", None)
    try:
        function = load_function(spec, None if source is None else str(source))
    except InvalidArgument as exc:
        return inconclusive(request, str(exc))
    answers = []
    for run in (traj, traj.reference_run):
        if run is None:
            return inconclusive(request, f"{spec}: the run has no reference run, so its answer "
                                "has no second route (simulate with error_estimate=True).")
        try:
            answers.append(_classify(function(run, request.instance)))
        except Exception as exc:  # noqa: BLE001 - the user's function: report what went wrong
            return inconclusive(request, f"{spec} raised {type(exc).__name__}: {exc}")
    (kind, value), (ref_kind, ref_value) = answers
    evidence = {"function": spec, "run": value if kind != "other" else repr(value)[:80],
                "reference_run": ref_value if ref_kind != "other" else repr(ref_value)[:80]}
    if "other" in (kind, ref_kind):  # the file is wrong, not the numerics: a usage error
        bad = value if kind == "other" else ref_value
        raise UserFunctionError(f"{source or 'the claim file'}: conclusion.function: {spec} "
                                f"returned {bad!r:.60} ({type(bad).__name__}); it must return "
                                "a bool, a number (a margin) or a pair (margin, error).")
    if kind != ref_kind:
        return inconclusive(request, f"{spec} returned {value!r:.60} on the run and "
                            f"{ref_value!r:.60} on its reference run; it must return the same "
                            "kind (bool, number or pair) on both.", evidence)
    what = f"the predicate {spec}"
    if kind == "bool":
        if value != ref_value:
            return inconclusive(request, f"{what} is {value} on the run but {ref_value} on its "
                                "reference run: undecided at this precision.", evidence)
        evidence["note"] = "a bool: decided because the run and its reference run agree"
        return decide(request, 1 if value else -1, 0, what, unit="truth value (±1)",
                      evidence=evidence, basis=Basis.ESTIMATE)
    if kind == "number":
        margin, error = value, float(quantity_error(np.array(value), np.array(ref_value)))
    else:
        margin = value[0]
        error = value[1] + float(quantity_error(np.array(value[0]), np.array(ref_value[0])))
        if not value[1] >= 0:
            return inconclusive(request, f"{spec} returned the error {value[1]!r}; it must be "
                                "≥ 0.", evidence)
    return decide(request, margin, error, what, unit="the predicate's margin",
                  evidence=evidence, strict=False, basis=Basis.ESTIMATE)

