"""Build hook: the claim files ship inside the package.

``claims/`` at the repository root stays the one source of truth; building a wheel copies it to
``verify/claims/`` so that ``verify list``, ``verify show`` and ``verify run`` work from any
folder after ``pip install .`` (:func:`verify.cli.default_claims_dir`).  An editable install
reads the repository's ``claims/`` directly.  The rest of the configuration is pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithClaims(build_py):
    """``build_py`` that also copies ``claims/`` into the built package as ``verify/claims``."""

    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "claims"
        if not self.editable_mode and source.is_dir():
            self.copy_tree(str(source), str(Path(self.build_lib) / "verify" / "claims"))


setup(cmdclass={"build_py": BuildWithClaims})
