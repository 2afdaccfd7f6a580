"""The "Paper figures" section: the paper's setups re-run, with checks by independent routes."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy.spatial import ConvexHull

import verify.report.paper_figures as pf
from verify.report.figures import attention_rank
from verify.report.html import render_html
from verify.report.paper_figures import PAPER_FIGURES

MAKERS = [pf.polytope_figures, pf.polytope_subspace_figures, pf.hyperplane_figures,
          pf.leaders_figures, pf.low_rank_figures]


@pytest.fixture(scope="module")
def figures():
    return {maker.__name__: maker() for maker in MAKERS}


def _artists(fig: Figure, gid: str) -> list:
    ax = fig.axes[0]
    return [a for a in [*ax.lines, *ax.patches, *ax.collections] if a.get_gid() == gid]


def test_makers_registered_once_and_return_captioned_figures(figures):
    for maker in MAKERS:
        assert PAPER_FIGURES.count(maker) == 1
        out = figures[maker.__name__]
        assert out and all(isinstance(c, str) and isinstance(f, Figure) for c, f in out)
        assert "float64" in out[0][0] and "deviation" in out[0][0]  # precision and error stated


def test_runs_are_accurate_and_reproducible():
    for name in pf.SETUPS:
        run = pf.paper_run(name)
        assert run.traj.success and run.traj.t[-1] == run.horizon
        assert 0 < run.error < 1e-6, (name, run.error)
    again, _, _ = pf._instances("polytope")
    assert (again.x0 == pf.paper_run("polytope").instance.x0).all()  # exact, seeded


def test_float_reference_measures_the_error_an_arb_reference_measures():
    """Where a figure states only the drawn run's error, a float64 re-run at rtol 1e-13 stands
    for the arb reference: both measure the rtol-1e-10 run's deviation (the re-run's own error
    is ~1000 times smaller), on the same order; the certified leaders need arb (their figures
    keep it)."""
    for name in ("polytope-subspace", "hyperplanes"):
        assert name not in pf.CERTIFIED_LEADERS
        by_float, by_arb = pf.paper_run(name), pf.paper_run(name, arb=True)
        assert "rtol $10^{-13}$" in by_float.precision and "arb" in by_arb.precision
        np.testing.assert_array_equal(by_float.traj.state, by_arb.traj.state)  # the drawn run
        assert by_arb.error / 3 <= by_float.error <= 10 * by_arb.error, name
    assert all("arb" in pf.paper_run(name).precision for name in pf.CERTIFIED_LEADERS)


def test_polytope_hull_matches_an_independent_hull(figures):
    (_, fig), = figures["polytope_figures"]
    run = pf.paper_run("polytope")
    lead = run.leaders()
    assert 3 <= len(lead) <= 20
    (polygon,) = _artists(fig, "predicted-polytope")
    drawn = polygon.get_xy()
    drawn = drawn[:-1] if np.allclose(drawn[0], drawn[-1]) else drawn
    hull = ConvexHull(run.traj.z[-1][lead])  # scipy's Qhull, not the exact LP route
    assert len(drawn) == len(hull.vertices)
    # every leader attends to itself in the limit
    P = run.traj.attention[-1]
    assert all(P[i, i] > 0.99 for i in lead)
    assert len(_artists(fig, "leaders")) == 1


def test_subspace_lines_are_vertical_through_a_zero_b(figures):
    (_, fig), = figures["polytope_subspace_figures"]
    z1 = pf.paper_run("polytope-subspace").traj.z[-1][:, 0]
    xs = sorted({round(float(line.get_xdata()[0]), 9) for line in
                 _artists(fig, "predicted-subspace")})
    for line in _artists(fig, "predicted-subspace"):
        assert np.ptp(line.get_xdata()) == 0  # direction e_2
    assert np.allclose(xs, [z1.min(), 0.0, z1.max()], atol=1e-12)


def test_hyperplane_lines_satisfy_phi_star_equals_c(figures):
    (_, fig), = figures["hyperplane_figures"]
    run = pf.paper_run("hyperplanes")
    V = np.array(run.instance.model.V, dtype=float)
    values, vectors = np.linalg.eig(V.T)  # left eigenvectors, by numpy (independent route)
    w = np.real(vectors[:, np.argmax(values.real)])
    proj = run.traj.z[-1] @ w
    expected = sorted([proj.min(), 0.0, proj.max()])
    lines = _artists(fig, "predicted-hyperplane")
    assert len(lines) == 3
    seen = []
    for line in lines:
        p = np.column_stack([line.get_xdata(), line.get_ydata()])
        assert abs(w @ (p[1] - p[0])) < 1e-9 * np.linalg.norm(p[1] - p[0])  # parallel to ker φ*
        seen.append(float(w @ p[0]))
    assert np.allclose(sorted(seen), expected, atol=1e-9)
    phi, offsets, radius = pf.hyperplane_lines(run)
    assert radius < 1e-30 and abs(abs(phi @ w) - np.linalg.norm(phi) * np.linalg.norm(w)) < 1e-12


def test_leaders_graph_and_low_rank_attention(figures):
    paths, graph, heat = (f for _, f in figures["leaders_figures"])
    run = pf.paper_run("leaders")
    lead = run.leaders()
    assert lead and all(run.traj.attention[-1][i, i] > 0.99 for i in lead)
    assert [c.get_gid() for c in graph.axes[0].collections].count("leaders") == 1
    assert len(heat.axes) >= 3
    low = pf.paper_run("low-rank").traj.attention
    assert attention_rank(low[-1]) < attention_rank(low[0]) == low.shape[1]


def test_html_report_has_the_section_with_inline_images(tmp_path, monkeypatch):
    data = {"run_id": "test", "started": "s", "finished": "f", "seconds": 0.0, "resumed": 0,
            "exit_code": 0, "claims": [], "verdicts": [], "instances": [],
            "parameters": {"instances": None, "seed": None, "precision": None, "horizon": None},
            "versions": {"python": "3"}}
    page = render_html(data, cache_dir=tmp_path)
    assert "<h2>Paper figures</h2>" in page
    section = page.split("<h2>Paper figures</h2>")[1].split("<h2>Environment</h2>")[0]
    assert section.count('src="data:image/png;base64,') == 7
    assert "could not be drawn" not in section
    assert "Paper figures" not in render_html(data, figures=False)
    # the same code draws the same paper figures: the second report reads them from the cache
    monkeypatch.setattr(pf, "paper_run", lambda name: 1 / 0)
    again = render_html(data, cache_dir=tmp_path)
    assert again.split("<h2>Paper figures</h2>")[1].split("<h2>Environment</h2>")[0] == section
