"""Conjecture files: each kind of mistake gives its own clear message naming the field."""

from __future__ import annotations

import textwrap

import pytest

from verify.cli import main
from verify.errors import InvalidArgument
from verify.run import load_conjecture

GOOD = '''
id = "toy"
statement = "Consensus on the sphere."
hypotheses = ["is_identity"]

[conclusion]
type = "consensus"
variable = "x"

[search]
n = [2, 3]
d = [2, 2]
V = ["identity"]
tokens = ["sphere"]
model = { form = "x", normalisation = "sphere" }
horizon = 5
'''


def write(tmp_path, text, name="conj.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_good_file_loads_with_the_defaults_of_a_users_conjecture(tmp_path):
    conj = load_conjecture(write(tmp_path, GOOD))
    assert conj.claim.kind.value == "conjecture" and conj.claim.expected.value == "open"
    assert conj.universal
    assert [c.to_json() for c in conj.claim.conclusions] == [{"type": "consensus",
                                                              "variable": "x"}]
    assert conj.claim.families == ()


@pytest.mark.parametrize("change, field, words", [
    (("type = \"consensus\"", "type = \"consensos\""), "conclusion.type",
     "Did you mean 'consensus'"),
    (("variable = \"x\"", "variabel = \"x\""), "conclusion.variabel", "Did you mean 'variable'"),
    (("hypotheses = [\"is_identity\"]", "hypotheses = [\"is_identiti\"]"), "hypotheses[0]",
     "Did you mean 'is_identity'"),
    (("id = \"toy\"", "id = \"Toy Conjecture\""), "id", "kebab-case"),
    (("[conclusion]\ntype = \"consensus\"\nvariable = \"x\"\n", ""), "conclusion", "missing"),
    (("horizon = 5", "horizon = -5"), "search.horizon", ""),
    (("n = [2, 3]", "n = [3, 2]"), "search.n", ""),
    (("tokens = [\"sphere\"]", "tokens = [\"spere\"]"), "search.tokens", "Did you mean 'sphere'"),
    (("horizon = 5", "horizon = 5\nhorizn = 3"), "search.horizn", "Did you mean"),
    (("statement = \"Consensus on the sphere.\"", "statement = \"$\\top$\""), "statement",
     "literal string"),
    (("d = [2, 2]", "d = [2, 2"), "", "not valid TOML"),
])
def test_each_mistake_names_its_field(tmp_path, change, field, words):
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(InvalidArgument) as info:
        load_conjecture(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}"), message
    assert words in message


def test_a_bad_formula_is_rejected_when_the_file_is_read(tmp_path):
    text = GOOD.replace('type = "consensus"\nvariable = "x"',
                        'type = "limit"\nequals = "mean(y0, axis=0)"')
    with pytest.raises(InvalidArgument, match=r"conclusion.equals: unknown name 'y0'"):
        load_conjecture(write(tmp_path, text))


def test_the_cli_exits_2_with_the_message_and_no_traceback(tmp_path, capsys):
    path = write(tmp_path, GOOD.replace('type = "consensus"', 'type = "consensos"'))
    assert main(["check", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "conclusion.type: unknown conclusion 'consensos'" in err
    assert "Traceback" not in err


def test_a_missing_file_and_bad_options_exit_2(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read the conjecture file" in capsys.readouterr().err
    path = write(tmp_path, GOOD)
    assert main(["check", str(path), "--budget", "-1"]) == 2
    assert "--budget=-1.0 must be a positive" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:  # argparse: --budget and --instances exclude
        main(["check", str(path), "--budget", "5", "--instances", "3"])
    assert info.value.code == 2


def test_the_help_lists_exactly_the_registered_conclusions():
    from verify.claim import CONCLUSIONS, PREDICTIONS
    from verify.cli import CONCLUSION_HELP
    listed = {line.split()[0] for line in CONCLUSION_HELP.splitlines()
              if line.startswith("  ") and not line.startswith("   ")}  # not continuations
    # the library's own words (tests register toy conclusions of their own)
    assert listed == {name for name, c in CONCLUSIONS.items()
                      if c.judge.__module__.startswith("verify.")}
    assert all(f'"{name}"' in CONCLUSION_HELP for name, p in PREDICTIONS.items()
               if p.function.__module__.startswith("verify."))
    for ctype in CONCLUSIONS.values():  # every word of the vocabulary is documented
        assert ctype.summary and ctype.needs and ctype.keys is not None
