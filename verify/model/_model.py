r"""The model family: weights, variant and initial tokens, validated once.

The core is the paper's equation (1.1)

.. math:: \dot x_i = \sum_j P_{ij}(t)\, V x_j,\qquad
          P_{ij} = \frac{e^{\beta\langle Q x_i, K x_j\rangle}}
                         {\sum_l e^{\beta\langle Q x_i, K x_l\rangle}},

with constant ``Q, K`` (``k×d``, possibly rectangular) and ``V`` (``d×d``). A :class:`Model`
also names the *variant* (design.md, "The model family"):

``form``
    ``"x"`` (the tokens themselves), ``"z"`` (rescaled tokens ``z = e^{-tV} x``, eq. (3.1)) or
    ``"discrete"`` (residual layers ``x[k+1] = x[k] + h Σ_j P_ij[k] V x_j[k]`` with step ``h``).
``attention``
    ``"softmax"``, ``"hardmax"`` (argmax set, ties split evenly) or ``"unnormalised"``
    (``(1/n) Σ_j e^{β<Qx_i,Kx_j>}``, rows not normalised).
``mask``
    ``"full"``, ``"causal"`` (token ``i`` sees ``j ≤ i``) or an ``n×n`` 0/1 adjacency.
``normalisation``
    ``"none"``, ``"sphere"`` (post-LN: tokens on the unit sphere, velocity projected on the
    tangent space) or ``"pre-ln"`` (attention and values read ``x/|x|``).
``heads``
    several ``(Q, K, V)`` triples whose outputs add up.
``mlp``
    ``W σ(·) (+ b)`` applied to the attention output, ``σ`` in ``relu``, ``tanh``, ``identity``;
    in the rescaled form this is the paper's §12 model ``ż_i = W σ(V Σ_j P_ij (z_j − z_i))``.

**Which variant?** Code outside this module never compares these strings: it asks the model
(:attr:`Model.rescaled`, :attr:`~Model.discrete`, :attr:`~Model.continuous_tokens`,
:attr:`~Model.softmax`, :attr:`~Model.full_mask`, :attr:`~Model.causal_mask`,
:attr:`~Model.on_sphere`, :attr:`~Model.pre_ln`, :attr:`~Model.normalised`,
:attr:`~Model.bounded_scores`, :attr:`~Model.single_head`, :attr:`~Model.has_mlp`,
:attr:`~Model.field_has_kinks`, :meth:`~Model.departures`), so that a new variant is answered
here once.

Every matrix is kept **exactly** (an object array of :class:`~fractions.Fraction`, see
:mod:`verify.exact.inputs`) together with its float64 rounding.

Examples
--------
>>> m = Model(V=[[1, 0], [0, 1]])
>>> m.d, m.form, m.attention
(2, 'z', 'softmax')
>>> inst = Instance(m, [["1", "0.1"], ["1", "-0.1"]])
>>> inst.n, inst.x0[0, 1]
(2, Fraction(1, 10))
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import as_float_array, rational_array, to_rational
from verify.exact.linalg import exact_det, from_fmpq_mat, to_fmpq_mat

__all__ = [
    "BOUNDED_SCORES",
    "FORMS",
    "ATTENTIONS",
    "NORMALISATIONS",
    "ACTIVATIONS",
    "Head",
    "MLP",
    "Model",
    "Instance",
]

FORMS = ("x", "z", "discrete")
ATTENTIONS = ("softmax", "hardmax", "unnormalised")
NORMALISATIONS = ("none", "sphere", "pre-ln")
ACTIVATIONS = ("relu", "tanh", "identity")
MASKS = ("full", "causal")
#: Normalisations whose attention reads unit vectors: the scores stay bounded for all time.
BOUNDED_SCORES = ("sphere", "pre-ln")


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgument(
            f"Unknown {name}={value!r}; {name} must be one of {', '.join(map(repr, choices))}."
        )
    return value


@dataclass(frozen=True)
class Head:
    """One attention head ``(Q, K, V)``, exact (object arrays of Fractions) and in float64.

    ``B = Qᵀ K`` is the bilinear form; only it enters the dynamics.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray

    @classmethod
    def from_matrices(cls, V: object, Q: object = None, K: object = None, *,
                      label: str = "") -> tuple[Head, dict[str, str]]:
        """Validate and convert; ``Q`` and ``K`` default to the identity.

        Returns the head and the conversions used, keyed by matrix name.
        """
        conversions = {}
        exact = {}
        V_, conversions[f"V{label}"] = rational_array(f"V{label}", V)
        if V_.shape[0] != V_.shape[1]:
            raise InvalidArgument(
                f"Expected V{label} square but got V{label}.shape={V_.shape}; V must be d×d."
            )
        d = V_.shape[0]
        if d == 0:
            raise InvalidArgument(f"V{label} is empty; the token dimension d must be at least 1.")
        exact["V"] = V_
        for name, value in (("Q", Q), ("K", K)):
            if value is None:
                value = np.eye(d, dtype=int)
            array, conversions[f"{name}{label}"] = rational_array(f"{name}{label}", value)
            if array.shape[1] != d:
                raise InvalidArgument(
                    f"Expected {name}{label} with d={d} columns (d from V{label}.shape={V_.shape})"
                    f" but got {name}{label}.shape={array.shape}; {name} must be k×d."
                )
            exact[name] = array
        if exact["Q"].shape[0] != exact["K"].shape[0]:
            raise InvalidArgument(
                f"Q{label}.shape={exact['Q'].shape} and K{label}.shape={exact['K'].shape} must "
                "have the same number of rows k, so that <Q x, K y> is defined."
            )
        return cls(**exact), conversions

    @property
    def d(self) -> int:
        return self.V.shape[0]

    @property
    def B(self) -> np.ndarray:
        """The exact bilinear form ``Qᵀ K`` (``d×d``), multiplied in FLINT (a Python ``Fraction``
        product costs seconds at d = 128)."""
        return from_fmpq_mat(to_fmpq_mat(self.Q).transpose() * to_fmpq_mat(self.K))


@dataclass(frozen=True)
class MLP:
    """The map ``y ↦ W σ(y) + b`` applied to the attention output."""

    W: np.ndarray
    activation: str = "relu"
    bias: np.ndarray | None = None


class Model:
    """Weights and variant of a self-attention dynamics (see the module docstring).

    Parameters
    ----------
    V, Q, K : array_like
        ``V`` is ``d×d``; ``Q, K`` are ``k×d`` (default: the ``d×d`` identity). Entries may be
        ints, decimal or fraction strings, Decimals or floats (taken at their exact binary value).
    beta : number, default 1
        Scales the bilinear form: scores are ``β <Q x_i, K x_j>``.
    form, attention, mask, normalisation : str
        The variant; ``mask`` may also be an ``n×n`` 0/1 adjacency.
    h : number, optional
        Step of the discrete form (required there, forbidden elsewhere).
    heads : list of dict, optional
        Several heads ``[{"V": ..., "Q": ..., "K": ...}, ...]``; then ``V, Q, K`` are omitted.
    mlp : dict, optional
        ``{"W": ..., "activation": "relu", "bias": ...}``.

    Raises
    ------
    InvalidArgument
        Wrong shapes, NaN or infinite entries, an unknown variant, a singular ``I + hV`` in the
        discrete form (its rescaling ``z[k] = (I + hV)^{-k} x[k]`` needs the inverse), or a
        variant that has no rescaled form combined with ``form="z"``.
    """

    def __init__(self, V: object = None, Q: object = None, K: object = None, *,
                 beta: object = 1, form: str = "z", attention: str = "softmax",
                 mask: object = "full", normalisation: str = "none", h: object = None,
                 heads: list[dict] | None = None, mlp: dict | None = None) -> None:
        self.conversions: dict[str, str] = {}
        if heads is not None:
            if V is not None or Q is not None or K is not None:
                raise InvalidArgument("Give either V (with Q, K) or heads=[...], not both.")
            if not heads:
                raise InvalidArgument("heads=[] is empty; give at least one head.")
            built = []
            for index, head in enumerate(heads):
                unknown = set(head) - {"V", "Q", "K"}
                if unknown or "V" not in head:
                    raise InvalidArgument(
                        f"heads[{index}] must have keys V (required), Q, K; got {sorted(head)}."
                    )
                made, conv = Head.from_matrices(head["V"], head.get("Q"), head.get("K"),
                                                label=f"_{index}")
                built.append(made)
                self.conversions.update(conv)
            if len({h_.d for h_ in built}) != 1:
                raise InvalidArgument("All heads must act on the same dimension d.")
            self.heads = tuple(built)
        else:
            if V is None:
                raise InvalidArgument("V is required: the value matrix, d×d.")
            made, conv = Head.from_matrices(V, Q, K)
            self.heads = (made,)
            self.conversions.update(conv)
        self.beta, self.conversions["beta"] = to_rational(beta, "beta")
        self.form = _check_choice("form", form, FORMS)
        self.attention = _check_choice("attention", attention, ATTENTIONS)
        self.normalisation = _check_choice("normalisation", normalisation, NORMALISATIONS)
        if isinstance(mask, str):
            self.mask: str | np.ndarray = _check_choice("mask", mask, MASKS)
        else:
            self.mask = self._adjacency(mask)
        self.h = self._step(h)
        self.mlp = self._mlp(mlp)
        self._check_rescaling()

    # -- validation helpers -------------------------------------------------------------
    def _adjacency(self, mask: object) -> np.ndarray:
        array = np.asarray(mask)
        if array.ndim != 2 or array.shape[0] != array.shape[1]:
            raise InvalidArgument(
                f"mask must be 'full', 'causal' or a square n×n 0/1 adjacency; got shape "
                f"{array.shape}."
            )
        if not np.isin(array, (0, 1)).all():
            raise InvalidArgument("mask adjacency entries must be 0 or 1 (or booleans).")
        array = array.astype(bool)
        empty = np.flatnonzero(~array.any(axis=1))
        if empty.size:
            raise InvalidArgument(
                f"mask row {int(empty[0])} has no 1: token {int(empty[0])} would attend to "
                "nothing; give every token at least one neighbour (e.g. itself)."
            )
        return array

    def _step(self, h: object) -> Fraction | None:
        if self.form != "discrete":
            if h is not None:
                raise InvalidArgument(f"h={h!r} is only used with form='discrete'; drop it.")
            return None
        if h is None:
            raise InvalidArgument("form='discrete' needs the step h (e.g. h=0.1).")
        step, self.conversions["h"] = to_rational(h, "h")
        if step <= 0:
            raise InvalidArgument(f"h={step} must be positive.")
        for index, head in enumerate(self.heads):
            R = np.vectorize(Fraction, otypes=[object])(np.eye(self.d, dtype=int)) + step * head.V
            if exact_det(R) == 0:
                raise InvalidArgument(
                    f"I + hV is singular for h={step} (head {index}): the rescaled discrete "
                    "tokens z[k] = (I + hV)^(-k) x[k] are undefined; change h."
                )
        return step

    def _mlp(self, mlp: dict | None) -> MLP | None:
        if mlp is None:
            return None
        unknown = set(mlp) - {"W", "activation", "bias"}
        if unknown or "W" not in mlp:
            raise InvalidArgument(f"mlp must have keys W (required), activation, bias; got "
                                  f"{sorted(mlp)}.")
        W, self.conversions["mlp.W"] = rational_array("mlp.W", mlp["W"])
        if W.shape != (self.d, self.d):
            raise InvalidArgument(f"Expected mlp.W of shape {(self.d, self.d)} but got {W.shape}.")
        activation = _check_choice("mlp.activation", mlp.get("activation", "relu"), ACTIVATIONS)
        bias = None
        if mlp.get("bias") is not None:
            bias, self.conversions["mlp.bias"] = rational_array("mlp.bias", mlp["bias"], ndim=1)
            if bias.shape != (self.d,):
                raise InvalidArgument(f"Expected mlp.bias of length {self.d}, got {bias.shape}.")
        return MLP(W, activation, bias)

    def _check_rescaling(self) -> None:
        if self.form != "z":
            return
        reasons = []
        if self.normalisation != "none":
            reasons.append(f"normalisation={self.normalisation!r}")
        if len(self.heads) > 1:
            reasons.append("several heads")
        if reasons:
            raise InvalidArgument(
                f"form='z' (rescaled tokens z = e^(-tV) x) is defined only for one head without "
                f"normalisation; this model has {' and '.join(reasons)}. Use form='x'."
            )

    # -- accessors ------------------------------------------------------------------------
    @property
    def d(self) -> int:
        """Token dimension."""
        return self.heads[0].d

    @property
    def V(self) -> np.ndarray:
        """Exact value matrix of the (single) head."""
        return self._single().V

    @property
    def Q(self) -> np.ndarray:
        return self._single().Q

    @property
    def K(self) -> np.ndarray:
        return self._single().K

    @property
    def B(self) -> np.ndarray:
        """Exact bilinear form ``β Qᵀ K`` of the (single) head."""
        return self.beta * self._single().B

    def _single(self) -> Head:
        if len(self.heads) != 1:
            raise InvalidArgument(f"This model has {len(self.heads)} heads; use model.heads[i].")
        return self.heads[0]

    def float_heads(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per head, the float64 ``(V, β QᵀK)``: everything the vector fields need (computed
        once, read-only: the exact-to-float conversion of a 128×128 head takes ~0.2 s, and a
        run with its error estimate builds several fields)."""
        cached = self.__dict__.get("_float_heads")
        if cached is None or cached[0] is not self.beta or cached[1] is not self.heads:
            arrays = [(as_float_array(h.V), as_float_array(self.beta * h.B)) for h in self.heads]
            for pair in arrays:
                for array in pair:
                    array.setflags(write=False)
            cached = self._float_heads = (self.beta, self.heads, arrays)
        return cached[2]

    def mask_for(self, n: int) -> np.ndarray | None:
        """The ``n×n`` boolean mask, or ``None`` for full attention."""
        if isinstance(self.mask, np.ndarray):
            if self.mask.shape != (n, n):
                raise InvalidArgument(
                    f"mask has shape {self.mask.shape} but there are n={n} tokens; "
                    f"the adjacency must be {n}×{n}."
                )
            return self.mask
        if self.mask == "causal":
            return np.tril(np.ones((n, n), dtype=bool))
        return None

    # -- which variant? (the one place; design.md "The model family", style guide 16) ----
    @property
    def rescaled(self) -> bool:
        """Rescaled tokens ``z = e^{-tV} x`` (``form="z"``)."""
        return self.form == "z"

    @property
    def continuous_tokens(self) -> bool:
        """The tokens themselves in continuous time (``form="x"``)."""
        return self.form == "x"

    @property
    def discrete(self) -> bool:
        """Residual layers with step ``h`` (``form="discrete"``)."""
        return self.form == "discrete"

    @property
    def softmax(self) -> bool:
        """Softmax attention (not hardmax, not unnormalised)."""
        return self.attention == "softmax"

    @property
    def hardmax(self) -> bool:
        """Hardmax attention: each token attends to the argmax of its scores (ties split)."""
        return self.attention == "hardmax"

    @property
    def unnormalised_attention(self) -> bool:
        """Unnormalised attention ``(1/n) e^{S_ij}`` (no row sums; not a layer norm)."""
        return self.attention == "unnormalised"

    @property
    def full_mask(self) -> bool:
        """Every token attends to every token (no causal mask, no adjacency)."""
        return isinstance(self.mask, str) and self.mask == "full"

    @property
    def causal_mask(self) -> bool:
        """Token ``i`` attends to tokens ``j ≤ i`` only (token 0 sees only itself)."""
        return isinstance(self.mask, str) and self.mask == "causal"

    @property
    def on_sphere(self) -> bool:
        """Post-LN: tokens on the unit sphere, the velocity projected on its tangent space."""
        return self.normalisation == "sphere"

    @property
    def pre_ln(self) -> bool:
        """Pre-LN: attention and values read ``x/|x|``."""
        return self.normalisation == "pre-ln"

    @property
    def normalised(self) -> bool:
        """A layer norm of either kind (``on_sphere`` or ``pre_ln``)."""
        return self.normalisation != "none"

    @property
    def bounded_scores(self) -> bool:
        """The attention reads unit vectors, so the scores stay bounded by ``β‖QᵀK‖₂`` for all
        time (the precision a run needs is then constant in ``T``)."""
        return self.normalisation in BOUNDED_SCORES

    @property
    def single_head(self) -> bool:
        """One ``(Q, K, V)`` head."""
        return len(self.heads) == 1

    @property
    def has_mlp(self) -> bool:
        """An MLP ``W σ(·) (+ b)`` after the attention."""
        return self.mlp is not None

    @property
    def field_has_kinks(self) -> bool:
        """The vector field is only piecewise smooth: an MLP with ``σ = relu`` (kinks where a
        coordinate of ``V Σ_j P_ij (z_j − z_i)`` crosses 0; ``tanh`` and ``identity`` are smooth).
        An integrator's error expansion does not hold across a kink, so the error estimate of
        such a run has no measured coverage.

        >>> relu = Model(V=[[1, 0], [0, 1]], mlp={"W": [[1, 0], [0, 1]]})
        >>> tanh = Model(V=[[1, 0], [0, 1]], mlp={"W": [[1, 0], [0, 1]], "activation": "tanh"})
        >>> relu.field_has_kinks, tanh.field_has_kinks, Model(V=[[1]]).field_has_kinks
        (True, False, False)
        """
        return self.mlp is not None and self.mlp.activation == "relu"

    def departures(self) -> list[str]:
        """How this variant departs from the paper's model (1.1) — one softmax head, full
        attention, no normalisation, no MLP, continuous time (in ``x`` or rescaled ``z``) —
        one phrase per departure; empty for the model itself. The one place that says which
        variants the theorems are about (hypothesis ``plain_model``, certificates).

        >>> Model(V=[[1]]).departures(), Model(V=[[1]], mask="causal", form="x").departures()
        ([], ['a mask'])
        """
        bad = []
        if not self.single_head:
            bad.append(f"{len(self.heads)} heads")
        if self.discrete:
            bad.append(f"form={self.form!r}")
        if not self.softmax:
            bad.append(f"attention={self.attention!r}")
        if not self.full_mask:
            bad.append("a mask")
        if self.normalised:
            bad.append(f"normalisation={self.normalisation!r}")
        if self.has_mlp:
            bad.append("an MLP")
        return bad

    def describe(self) -> dict:
        """A plain summary of the variant (what a report prints)."""
        return {
            "d": self.d,
            "heads": len(self.heads),
            "beta": str(self.beta),
            "form": self.form,
            "h": None if self.h is None else str(self.h),
            "attention": self.attention,
            "mask": self.mask if isinstance(self.mask, str) else "adjacency",
            "normalisation": self.normalisation,
            "mlp": None if self.mlp is None else self.mlp.activation,
        }

    def __repr__(self) -> str:
        variant = ", ".join(f"{k}={v!r}" for k, v in self.describe().items())
        return f"Model({variant})"


class Instance:
    """A model together with its initial tokens ``x(0) = z(0)`` (an ``n×d`` array, exact).

    With ``normalisation="sphere"`` or ``"pre-ln"`` the tokens must be nonzero; on the sphere
    they must have unit norm up to float64 rounding (they are then normalised in float).

    Parameters
    ----------
    model : Model
    x0 : array_like, shape (n, d)
    name : str, optional
    """

    def __init__(self, model: Model, x0: object, name: str = "") -> None:
        self.model = model
        self.name = name
        self.x0, conversion = rational_array("x0", x0)
        self.conversions = dict(model.conversions, x0=conversion)
        n, d = self.x0.shape
        if n == 0:
            raise InvalidArgument("x0 is empty; give at least one token (x0 is n×d).")
        if d != model.d:
            raise InvalidArgument(
                f"Expected x0 of shape (n, {model.d}) but got x0.shape={self.x0.shape}; "
                f"tokens must have the dimension d={model.d} of V."
            )
        model.mask_for(n)  # validates an adjacency against n
        if model.normalisation != "none":
            norms = np.sum(as_float_array(self.x0) ** 2, axis=1)
            zero = np.flatnonzero(norms == 0)
            if zero.size:
                raise InvalidArgument(
                    f"token {int(zero[0])} is 0, but normalisation={model.normalisation!r} "
                    "divides by |x|; move it off the origin."
                )
            if model.normalisation == "sphere" and np.max(np.abs(norms - 1)) > 1e-12:
                bad = int(np.argmax(np.abs(norms - 1)))
                raise InvalidArgument(
                    f"token {bad} has |x|^2={norms[bad]:.6g}; with normalisation='sphere' the "
                    "tokens must lie on the unit sphere (normalise them first)."
                )

    @property
    def n(self) -> int:
        return self.x0.shape[0]

    @property
    def d(self) -> int:
        return self.x0.shape[1]

    def x0_float(self) -> np.ndarray:
        return as_float_array(self.x0)

    def __repr__(self) -> str:
        return f"Instance(name={self.name!r}, n={self.n}, d={self.d}, model={self.model!r})"
