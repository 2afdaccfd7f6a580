"""Tests of the run reports: results.json against its schema, report.md, a self-contained
report.html (checked in headless Chromium when /usr/bin/chromium exists)."""

from __future__ import annotations

import base64
import copy
import html
import json
import re
import subprocess
from pathlib import Path

import pytest
from run_claims_helpers import DATA, load_conclusions

from verify.claim import load_claims
from verify.errors import InvalidArgument
from verify.report.results import (
    RESULTS_SCHEMA,
    SCHEMA_VERSION,
    load_results,
    report_side_jobs,
    results_problems,
    validate_results,
    write_reports,
)
from verify.run import InlineExecutor, run_claims

CHROMIUM = Path("/usr/bin/chromium")




load_conclusions()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "20261101T000000Z-abcdef"
    run = run_claims(load_claims(DATA), out_dir=out, executor=InlineExecutor(), progress=False,
                     run_id=out.name)
    return run, write_reports(run)


def test_results_json_validates_and_records_the_run(report):
    _, paths = report
    data = load_results(paths["results.json"])
    assert data["schema_version"] == SCHEMA_VERSION and data["exit_code"] == 1
    assert set(data["versions"]) >= {"python", "numpy", "scipy", "sympy", "mpmath", "flint",
                                     "networkx", "matplotlib"}
    assert len(data["claims"]) == 6 and len(data["instances"]) == 9
    claim = next(c for c in data["claims"] if c["id"] == "tiny-refuted")
    assert claim["uses"] == ["tiny-holds", "tiny-flaky"] and len(claim["sha256"]) == 64
    inst = next(i for i in data["instances"] if i["claim"] == "tiny-refuted")
    assert inst["inputs"]["heads"][0]["Q"] == [["1", "1/2"], ["1/2", "1"]]
    assert inst["counterexample"] == "counterexamples/tiny-refuted-two-by-two-0.toml"
    assert inst["rechecked"]["verdict"] == "violated"
    flaky = next(i for i in data["instances"] if i["claim"] == "tiny-flaky")
    assert (flaky["verdict"], flaky["effective_verdict"]) == ("violated", "inconclusive")
    assert json.loads(paths["results.schema.json"].read_text()) == RESULTS_SCHEMA


@pytest.mark.parametrize("corrupt, message", [
    (lambda d: d.pop("run_id"), "missing required key 'run_id'"),
    (lambda d: d.update(schema_version=99), "must be 2"),
    (lambda d: d["instances"][0].update(verdict="proved"), "is not one of"),
    (lambda d: d["instances"][0]["inputs"]["x0"][0].__setitem__(0, "0.1"), "does not match"),
    (lambda d: d["instances"][0].update(margin=[1]), "is not number or string or null"),
    (lambda d: d["verdicts"][0].update(claim="nope"), "is not a listed claim"),
    (lambda d: d["claims"][0].update(colour="red"), "unexpected key 'colour'"),
    (lambda d: d["parameters"].update(instances=0), "< minimum 1"),
])
def test_corrupted_results_fail_validation(report, corrupt, message):
    data = json.loads(report[1]["results.json"].read_text())
    assert results_problems(data) == []
    bad = copy.deepcopy(data)
    corrupt(bad)
    assert any(message in p for p in results_problems(bad)), results_problems(bad)
    with pytest.raises(InvalidArgument, match="schema version 2"):
        validate_results(bad)


def test_report_md_has_the_summary_table_and_each_claim(report):
    text = report[1]["report.md"].read_text()
    lines = text.splitlines()
    top = lines.index("## Summary")
    assert lines[top + 2].startswith("| claim | label | kind | expected | verdict | holds |")
    rows = [ln for ln in lines[top + 4:top + 10]]
    assert len(rows) == 6 and all(ln.startswith("| tiny-") for ln in rows)
    assert "| tiny-holds | Theorem 0.1 | theorem | holds | supported on 3 instances | 3 | 0 | 0 |" \
        in text
    for cid in ("tiny-holds", "tiny-refuted", "tiny-out-of-scope"):
        assert f"## `{cid}`" in text
    assert "| pair#0 | – | inconclusive (first violated) |" in text
    assert "replay its trajectory: `verify simulate counterexamples/" in text
    assert "--instance counterexamples/tiny-refuted-two-by-two-0.toml`" in text  # re-judges it
    assert "proved" not in text.replace("never a proof", "")


def test_claim_sections_lead_with_the_verdict_and_the_decisive_instance(report):
    page = report[1]["report.html"].read_text()
    section = page.split('<h2 id="tiny-refuted">')[1].split("<h2 ")[0]
    order = [section.index(mark) for mark in (
        "Verdict: refuted", "Counterexample: two-by-two#0", "verify check ",
        "verify simulate counterexamples/", "Exact data of two-by-two#0: the counterexample file",
        "<img", "<table>")]
    assert order == sorted(order)
    gap = page.split('<h2 id="tiny-known-gap">')[1].split("<h2 ")[0]
    assert 'class="verdict v-refuted-expected"' in gap  # a false proof step, refuted as expected
    assert 'class="verdict v-refuted"' in section       # a theorem refuted: the tool's alarm


def _images(page: str) -> list[str]:
    return re.findall(r'<img\s[^>]*src="([^"]*)"', page)


def test_report_html_is_self_contained(report):
    page = report[1]["report.html"].read_text()
    assert not re.search(r"""src\s*=\s*["']?\s*(https?:)?//""", page)  # nothing is fetched
    links = re.findall(r"""href\s*=\s*["']?\s*((?:https?:)?//[^"' >]*)""", page)
    assert links == ["https://arxiv.org/abs/2305.05465v6"]  # the paper, only followed on a click
    assert "@import" not in page and "url(" not in page
    claims_part, _, paper_part = page.partition("<h2>Paper figures</h2>")
    # (paths, P(t)) for the decisive instances of the 4 claims with an in-scope instance that
    # ran (not tiny-raises, not tiny-out-of-scope) + tiny-holds' convergence plot; the
    # dependency graph is an inline SVG
    assert len(_images(claims_part)) == 2 * 4 + 1
    assert claims_part.count("<svg") == 1 and "claim A uses claim B" in claims_part
    images = _images(page)
    assert len(images) > len(_images(claims_part))  # the paper-figures section has its own
    for uri in images:
        assert uri.startswith("data:image/png;base64,")
        assert base64.b64decode(uri.split(",", 1)[1], validate=True)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "figure unavailable" not in page
    formula = re.search(r'<span class="math" title="\|r\(t\)\| \\le C">(<math .*?</math>)</span>',
                        page)
    assert formula and "&#x02264;" in formula.group(1)  # ≤, typeset as MathML


def _visible_text(page: str) -> str:
    """The text a reader sees: text nodes outside <script>/<style> (not attributes such as a
    formula's LaTeX tooltip)."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self):
            super().__init__()
            self.parts, self.hidden = [], 0

        def handle_starttag(self, tag, attrs):
            self.hidden += tag in ("script", "style")

        def handle_endtag(self, tag):
            self.hidden -= tag in ("script", "style")

        def handle_data(self, data):
            if not self.hidden:
                self.parts.append(data)

    parser = Text()
    parser.feed(page)
    return " ".join(parser.parts)


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--force-device-scale-factor=1"]


def _chromium(tmp_path, name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / name}",
                           *args], capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_report_html_opens_in_headless_chromium(report, tmp_path):
    from verify.report.html import page_title

    path = report[1]["report.html"]
    url = path.resolve().as_uri()
    dom = _chromium(tmp_path, "a", "--enable-logging=stderr", "--v=0", "--dump-dom", url)
    n = len(_images(path.read_text()))
    assert f'data-images="ok:{n}"' in dom.stdout, dom.stdout[:300]
    data = load_results(report[1]["results.json"])
    title = re.search(r"<title>(.*?)</title>", dom.stdout).group(1)
    assert html.unescape(title) == page_title(data) and title.startswith("verify run ")
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == []
    # the formulas are MathML elements and no LaTeX command survives in the visible text
    text = _visible_text(dom.stdout)
    assert dom.stdout.count("<math") >= 6, "every claim statement has formulas"
    assert not re.findall(r"\\[A-Za-z]+", text), re.findall(r".{30}\\[A-Za-z]+.{30}", text)[:5]
    assert "mathvariant" not in dom.stdout.replace('mathvariant="normal"', "")
    png = tmp_path / "shot.png"
    _chromium(tmp_path, "b", f"--screenshot={png}", "--window-size=1200,3000", url)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 50_000


# Characters no font has: Chromium draws its missing-glyph box for each; a probed character
# drawn exactly like them has no glyph either.
NO_GLYPH = ("\ue000", "\u0378", "\U0010fffd")
CELL = 48


def _report_characters(page: str) -> set[str]:
    """The characters a reader sees in ``page`` and in every claim file's statement and notes
    (the suite's formulas), as the report renders them."""
    from verify.claim import load_claims
    from verify.report._texthtml import markdown_to_html
    from verify.report.markdown import READING_NUMBERS

    suite = load_claims(Path(__file__).resolve().parents[1] / "claims")
    pages = [page] + [markdown_to_html(c.statement + "\n\n" + (c.notes or "")) for c in suite]
    pages += [markdown_to_html(line) for line in READING_NUMBERS]
    text = "".join(_visible_text(p) for p in pages) + "×⁻⁰¹²³⁴⁵⁶⁷⁸⁹±"
    return {c for c in text if not c.isspace() and ord(c) > 32 and c not in NO_GLYPH}


def _glyph_cells(chars: list[str]) -> str:
    from verify.report.html import _CSS

    cells = "".join(f'<span class="c">{html.escape(c)}</span>' for c in chars)
    cells += "".join(f'<span class="c"><math><mi>{html.escape(c)}</mi></math></span>'
                     for c in chars)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{_CSS}"
            f"body{{margin:0;padding:0;max-width:none;width:{CELL * len(chars)}px;font-size:"
            f"28px;line-height:1}} .c{{display:inline-block;width:{CELL}px;height:{CELL}px;"
            "overflow:hidden;vertical-align:top}</style></head>"
            f"<body>{cells}</body></html>")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_no_character_of_the_report_is_a_missing_glyph_box(report, tmp_path):
    """Screenshot every character the report shows, in the report's fonts, as text and as
    MathML, next to characters that have no glyph anywhere: none may be drawn as their box
    (a comparison within one screenshot, so it holds whatever the fonts of the machine)."""
    from matplotlib.image import imread

    chars = sorted(_report_characters(report[1]["report.html"].read_text()))
    probe = list(NO_GLYPH) + chars
    rows = 2
    page = tmp_path / "glyphs.html"
    page.write_text(_glyph_cells(probe), encoding="utf-8")
    png = tmp_path / "glyphs.png"
    _chromium(tmp_path, "g", f"--screenshot={png}",
              f"--window-size={CELL * len(probe)},{CELL * rows + 400}", page.as_uri())
    image = imread(png)[..., :3].mean(axis=2)

    def cell(row: int, k: int):
        return image[row * CELL:(row + 1) * CELL, k * CELL:(k + 1) * CELL]

    missing = []
    for row in range(rows):
        boxes = [cell(row, k) for k in range(len(NO_GLYPH))]
        assert all(b.min() < 0.5 for b in boxes), "the reference boxes were not drawn"
        for k, c in enumerate(chars, start=len(NO_GLYPH)):
            if any(abs(cell(row, k) - b).max() < 0.02 for b in boxes):
                missing.append(f"U+{ord(c):04X} {c!r} ({'MathML' if row else 'text'})")
    assert missing == [], f"drawn as a missing-glyph box: {missing}"


def test_figures_drawn_alongside_the_checks_are_the_report_s_own(report, monkeypatch):
    """The claims' figures drawn in the run's side jobs, as each claim is judged, and the
    dependency graph, once every claim is, are those the report would draw afterwards: the
    report asks to draw nothing, and its HTML is the one drawn from results.json alone."""
    from verify.report import html as report_html

    first, _ = report  # its report filled the paper-figure cache that this run shares
    out = first.out_dir.parent / "20261101T000001Z-abcdef"
    claims = load_claims(DATA)
    run = run_claims(claims, out_dir=out, executor=InlineExecutor(), progress=False,
                     run_id=out.name, side_jobs=report_side_jobs(claims, out))
    assert {k for k in run.side if k[0] == "claim"} == {
        ("claim", c.id) for c in claims if c.id not in ("tiny-out-of-scope", "tiny-raises")}
    assert ("graph",) in run.side
    drawing = report_html.draw_figures
    asked: list = []
    monkeypatch.setattr(report_html, "draw_figures",
                        lambda jobs: asked.extend(jobs) or drawing(jobs))
    paths = write_reports(run)
    assert asked == []
    monkeypatch.setattr(report_html, "draw_figures", drawing)
    again = report_html.render_html(load_results(paths["results.json"]), run_dir=out,
                                    cache_dir=out.parent / ".cache")

    def undated(text: str) -> str:  # the SVG of the graph carries the time it was drawn
        return re.sub(r"<dc:date>[^<]*</dc:date>", "", text)

    assert undated(paths["report.html"].read_text(encoding="utf-8")) == undated(again)
