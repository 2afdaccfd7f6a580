"""The report as a mathematician reads it, on instances of the paper's own claim files: tokens
numbered from 1 in every text and figure label, every number of a verdict line within its
trusted digits, a refutation shown from its counterexample file with the command that re-judges
it, and ``verify.digits`` against exact arithmetic."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.claim import load_claim
from verify.digits import plus_minus, trusted, upper, versus
from verify.report.results import DESCRIPTIONS, RESULTS_SCHEMA, load_results, write_reports
from verify.run import InlineExecutor, run_claims

CLAIMS = Path(__file__).resolve().parents[1] / "claims"
# (claim, family): cheap instances of the suite whose texts name tokens (the first token among
# them: hull-nonincreasing's tightest pair is the centre, token 1), and both refutations.
CASES = (("hull-nonincreasing", "square-with-centre"), ("escape-threshold", "negative-side"),
         ("codimension", "identity-square"), ("boundrj-step", "spec-counterexample"))


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    import verify.report.html
    import verify.report.paper_figures  # noqa: F401 (it fills PAPER_FIGURES on import)

    claims = []
    for cid, family in CASES:
        claim = load_claim(CLAIMS / f"{cid}.toml")
        claims.append(replace(claim, families=(claim.family(family),)))
    out = tmp_path_factory.mktemp("suite") / "20261101T000000Z-0b1a5e"
    run = run_claims(claims, out_dir=out, executor=InlineExecutor(), progress=False,
                     run_id=out.name)
    with pytest.MonkeyPatch.context() as patch:  # the paper's figures are not the subject
        patch.setattr(verify.report.html, "PAPER_FIGURES", [])
        return run, write_reports(run)


def _visible(page: str) -> str:
    from test_report import _visible_text

    return _visible_text(page)


_TOKEN_REFERENCES = (r"\btokens? (\d+)\b", r"\btokens? \{([\d,]+)\}", r"\b[zx]_\{?(\d+)\}?\(",
                     r"\bleaders? \[([\d, ]+)\]", r"\(token (\d+)\)")


def _token_numbers(text: str) -> list[int]:
    found = []
    for pattern in _TOKEN_REFERENCES:
        for match in re.finditer(pattern, text):
            found += [int(v) for v in re.split(r"[, ]+", match.group(1)) if v]
    return found


def test_report_texts_number_tokens_from_one(suite):
    _, paths = suite
    texts = paths["report.md"].read_text() + _visible(paths["report.html"].read_text())
    numbers = _token_numbers(texts)
    assert numbers and 0 not in numbers, sorted(set(numbers))
    assert 1 in numbers  # the first token is named, so a 0-based text would have shown 0
    data = load_results(paths["results.json"])
    largest = max(len(r["inputs"]["x0"]) for r in data["instances"])
    assert max(numbers) <= largest


def test_figure_labels_number_tokens_from_one(suite):
    from verify.report.html import default_figures

    _, paths = suite
    data = load_results(paths["results.json"])
    claims = {c["id"]: c for c in data["claims"]}
    for record in data["instances"]:
        n = len(record["inputs"]["x0"])
        labels = []
        for _, fig in default_figures(record, claims[record["claim"]]):
            for ax in fig.axes:  # the paths' token labels, the heat maps' tick labels
                labels += [t.get_text().strip() for t in ax.texts
                           if t.get_text().strip().isdigit()]
                if ax.get_ylabel() == "token $i$":  # the heat maps' rows (the columns are
                    labels += [t.get_text() for t in ax.get_yticklabels()]  # texts, above)
        numbers = sorted({int(v) for v in labels})
        assert numbers and numbers[0] == 1 and numbers[-1] == n, (record["instance"], numbers)


_NUMBER = r"-?\d+(?:\.\d+)?(?:×10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?"
# a verdict's comparison as printed, and whether it says |margin| > error
_PAIRS = ((rf"margin ({_NUMBER}) > error estimate ({_NUMBER})", True),
          (rf"margin ({_NUMBER}) is within the error estimate ({_NUMBER})", False),
          (rf"violated by ({_NUMBER}), more than the error estimate ({_NUMBER})", True),
          (rf"margin ({_NUMBER}) ≤ error estimate ({_NUMBER})", False))


def _value(text: str) -> Decimal:
    mantissa, _, power = text.partition("×10")
    exponent = int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")) or 0)
    return Decimal(mantissa).scaleb(exponent)


def _last_place(text: str) -> int:
    """The exponent of the last printed digit."""
    return _value(text).as_tuple().exponent


def test_every_number_of_a_verdict_line_is_within_its_trusted_digits(suite):
    """A margin is printed no finer than the decimal place of its error's last digit (the
    ``v ± e`` convention), the error with at most the digits that show the comparison, and the
    printed pair is ordered as the verdict says."""
    _, paths = suite
    data = load_results(paths["results.json"])
    lines = [v["reason"] for v in data["verdicts"]]
    lines += [r["reason"] for r in data["instances"]] + [r["effective_reason"]
                                                         for r in data["instances"]]
    lines += [ln for ln in paths["report.md"].read_text().splitlines()
              if ln.startswith(("**Verdict", "**Tightest", "**Counterexample", "Decided on"))]
    checked = 0
    for line in lines:
        for pattern, larger in _PAIRS:
            for margin, error in re.findall(pattern, line):
                assert margin == "0" or _last_place(margin) >= _last_place(error), line
                if _value(error) > 0:
                    assert (abs(_value(margin)) > _value(error)) == larger, line
                checked += 1
        for value, error in re.findall(rf"\(?({_NUMBER}) ± ({_NUMBER})\)?(×10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?",
                                       line):
            assert _last_place(value) == _last_place(error), line  # v ± e: one decimal place
            checked += 1
    for record in data["instances"]:
        margin, error = record.get("margin"), record.get("error")
        if isinstance(margin, float) and isinstance(error, float) and error > 0:
            shown, bound = versus(margin, error)
            assert shown == "0" or _last_place(shown) >= _last_place(bound)
            checked += 1
    assert checked > 0


def test_a_refutation_is_shown_from_its_counterexample_file(suite):
    _, paths = suite
    page = paths["report.html"].read_text()
    boundrj = page.split('<h2 id="boundrj-step">')[1].split("<h2 ")[0]
    assert 'class="verdict v-refuted-expected"' in boundrj  # refuted as its file expects
    assert "verify check " in boundrj and "--instance counterexamples/" in boundrj
    assert "the counterexample file <code>counterexamples/" in boundrj
    assert 'horizon = &quot;12&quot;' in boundrj  # the file's (the re-check's) horizon
    assert "re-simulation of the counterexample file" in boundrj
    assert "the remainder" in boundrj  # r_j(t) over time, from the re-check's own data
    # codimension's literal statement fails only on a non-rigorous basis (violated (estimate)):
    # expected to fail, it is inconclusive, never red and never a counterexample file
    codimension = page.split('<h2 id="codimension">')[1].split("<h2 ")[0]
    assert 'class="verdict v-inconclusive"' in codimension
    assert "counterexamples/" not in codimension


def test_machine_written_formulas_are_typeset(suite):
    """No pseudo-math is left as plain text in the report: the reasons' and certificates'
    ``r_j``, ``e^(2 mu t)``, ``exp(2*t)`` are MathML, like the statements."""
    _, paths = suite
    page = paths["report.html"].read_text()
    page = re.sub(r"<(math|code|pre|details)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r"<(td|figcaption)><details>.*?</details>", " ", page, flags=re.S)
    text = _visible(page)
    leftovers = re.findall(r".{0,20}(?:\b[A-Za-zλφ]_[0-9a-z]\b|\be\^\(|\bexp\(|\w+ @ \w+)"
                           r".{0,20}", text)
    assert leftovers == [], leftovers[:5]


def test_the_suite_formulas_are_typeset_with_real_symbols():
    """Every formula of the claim files converts to MathML (no plain fallback) and no letter
    relies on ``mathvariant``, which Chromium ignores (𝒦 would render as K, like the matrix)."""
    from verify.claim import load_claims
    from verify.report._texthtml import markdown_to_html

    for claim in load_claims(CLAIMS):
        for text in (claim.statement, claim.notes or ""):
            page = markdown_to_html(text)
            assert "math plain" not in page, (claim.id, re.findall(r'plain" title="([^"]*)', page))
            assert not re.search(r'mathvariant="(?!normal)', page), claim.id
            assert "&#x029F5;" not in page  # ⧵, which no common font has (\\setminus is ∖)


def test_every_key_of_the_schema_is_described():
    def paths(schema, path=""):
        found = {path: "description" in schema}
        if isinstance(schema.get("items"), dict):
            found.update(paths(schema["items"], path))
        for key, value in schema.get("properties", {}).items():
            found.update(paths(value, f"{path}.{key}" if path else key))
        return found

    described = paths(RESULTS_SCHEMA)
    assert set(DESCRIPTIONS) <= set(described)
    top = [key for key in described if "." not in key]
    assert all(described[key] for key in top), [k for k in top if not described[k]]
    assert "from 1" in RESULTS_SCHEMA["description"]


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False).filter(
    lambda x: abs(x) > 1e-12 or x == 0)
positive = st.floats(min_value=1e-15, max_value=1e6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(finite, positive)
def test_trusted_digits_are_right_to_one_unit_of_the_last_place(value, error):
    """Every digit :func:`trusted` prints is right: the printed value is within
    ``error + one unit of its last place`` of the value (exact rational arithmetic)."""
    text = trusted(value, error)
    if "±" in text:
        return  # no digit trusted: the v ± e form, checked below
    shown = _value(text)
    unit = Decimal(1).scaleb(shown.as_tuple().exponent)
    assert abs(Fraction(shown) - Fraction(value)) <= Fraction(error) + Fraction(unit)
    assert Fraction(unit) >= 2 * Fraction(error) or len(text.strip("-0.").replace(".", "")) <= 7


@settings(max_examples=300, deadline=None)
@given(finite, positive)
def test_plus_minus_keeps_the_truth_inside(value, error):
    """``v ± e`` as printed contains every number within ``error`` of ``value``: the printed
    error is rounded up, and covers the rounding of the value."""
    text = plus_minus(value, error)
    error = Fraction(Decimal(repr(error)))  # rounded up from its shortest decimal form
    body, _, power = text.partition(")×10")
    v_text, e_text = body.strip("(").split(" ± ")
    scale = _value("1×10" + power) if power else Decimal(1)
    v, e = Fraction(Decimal(v_text) * scale), Fraction(Decimal(e_text) * scale)
    assert e >= Fraction(error)
    assert abs(v - Fraction(value)) <= Fraction(Decimal(1).scaleb(
        Decimal(e_text).as_tuple().exponent) * scale) / 2


@settings(max_examples=300, deadline=None)
@given(finite, positive)
def test_versus_shows_the_comparison_it_prints(margin, error):
    shown, bound = versus(margin, error)
    assert shown == "0" or _last_place(shown) >= _last_place(bound)
    if abs(abs(margin) - error) > 1e-6 * error:  # resolvable within the extra digits
        assert (abs(_value(shown)) > _value(bound)) == (abs(margin) > error), (shown, bound)
    assert _value(upper(error)) >= Decimal(repr(error))  # a bound stays a bound


@pytest.mark.parametrize("V, claim, expected", [
    ([[-1, 0], [0, -1]], {}, "x"),                        # z = e^{t} x blows up: draw x
    ([[1, 0], [0, 1]], {}, "z"),                          # x = e^{t} z blows up: draw z
    ([[1, 0], [0, 1]], {"conclusion": [{"type": "converges", "variable": "direction"}]},
     "direction"),                                        # the claim's own variable
])
def test_figures_draw_the_variable_in_which_the_claim_is_visible(V, claim, expected):
    from verify.flow.simulate import simulate
    from verify.model import Instance, Model
    from verify.report.html import choose_variable

    traj = simulate(Instance(Model(V=V), [["1", "0"], ["0", "1"], ["-1", "-1/2"]]), 12,
                    checkpoints=7, error_estimate=False)
    assert choose_variable(traj, {}, claim) == expected
