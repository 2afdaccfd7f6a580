r"""The Jacobian :math:`DF` of the fields of :mod:`verify.enclosure._fields`, in closed form, over
boxes of balls — or along a trajectory, as truncated Taylor series (python-flint
``arb_series``): the formulas below use only ``+ − × /`` and square roots, so one code serves
values and series.

Write :math:`\bar u_i = \sum_j A_{ij} u_j` and :math:`C_i = \sum_l A_{il}(u_l - \bar u_i)
(u_l - \bar u_i)^\top` for an attention :math:`A_{ij} = \operatorname{softmax}_j(S_{ij})`,
:math:`S_{il} = u_i^\top G u_l`. Since :math:`\partial A_{ij}/\partial S_{il} = A_{ij}
(\delta_{jl} - A_{il})` and :math:`\sum_l A_{il}(u_l - \bar u_i) = 0`,

.. math:: M_{ik} := \frac{\partial \bar u_i}{\partial u_k}
          = A_{ik}\big(I + (u_k - \bar u_i)(G^\top u_i)^\top\big) + \delta_{ik}\, C_i G^\top .

For unnormalised attention (:math:`A_{ij} = \tfrac1n e^{S_{ij}}`) it is
:math:`A_{ik}(I + u_k (G^\top u_i)^\top) + \delta_{ik} \sum_l A_{il} u_l (G u_l)^\top`.
Masked pairs have :math:`A_{ij} = 0`. Then, per variant (blocks :math:`J_{ik} = \partial F_i /
\partial x_k`):

* rescaled form, :math:`u = z`, :math:`G = E^\top B E` with :math:`E = e^{tV}`:
  :math:`J_{ik} = V (M_{ik} - \delta_{ik} I)`;
* token form: :math:`J_{ik} = \sum_h V_h M^h_{ik}` (:math:`u = x`, :math:`G = \beta B_h`);
* pre-LN: :math:`u_k = x_k/|x_k|`, so each block is multiplied on the right by
  :math:`(I - u_k u_k^\top)/|x_k|`;
* sphere: with :math:`m_i = \sum_h V_h \bar u^h_i`, :math:`\rho_i = \langle m_i, x_i\rangle /
  |x_i|^2`, :math:`\Pi_i = I - x_i x_i^\top/|x_i|^2` and :math:`Dm_{ik} = \sum_h V_h M^h_{ik}`,
  :math:`J_{ik} = \Pi_i\, Dm_{ik} - \delta_{ik}\big(x_i m_i^\top/|x_i|^2 - 2\rho_i x_i x_i^\top
  /|x_i|^2 + \rho_i I\big)`.

Along a trajectory (:func:`jacobian_series`) the plain softmax fields (rescaled form, token
form without pre-LN or the sphere) form these blocks from products of the coefficient matrices
(:func:`_softmax_series`: the Cauchy products of ``arb_mat`` in C); the other variants use the
same formulas on ``arb_series`` entries (:func:`_core`), 2–3× slower for ``d = 3``.

The test-suite checks every variant against the forward-mode jets of the field, and the
series of both routes against a raw-softmax derivative along 256-bit Picard series.
"""

from __future__ import annotations

from flint import arb_mat, arb_series, ctx

__all__ = ["jacobian", "jacobian_series"]


def _matvec(M: list[list], v: list, zero) -> list:
    return [sum((c * x for c, x in zip(row, v, strict=True)), zero) for row in M]


def _mul(P: list[list], Q: list[list], zero) -> list[list]:
    d = len(Q)
    return [[sum((P[a][c] * Q[c][b] for c in range(d)), zero) for b in range(len(Q[0]))]
            for a in range(len(P))]


def _blocks(spec, A: list[list], U: list[list], G: list[list], refs: list[int],
            zero) -> list[list]:
    """``M[i][k]`` (``d×d`` lists, ``None`` for a masked pair) for attention ``A``, tokens
    ``U``, form ``G`` and each row's reference column ``refs[i]`` (module docstring). The
    differences are formed from the reference token, :math:`u_k - \\bar u_i = (u_k - u_r) -
    \\sum_q A_{iq} (u_q - u_r)` (the rows of a softmax sum to 1): in balls the attention's
    width is then multiplied by the small offsets :math:`u_q - u_r` of a cluster, not by the
    tokens."""
    n, d = len(U), len(U[0])
    Gt = [[G[b][a] for b in range(d)] for a in range(d)]
    allowed = spec.allowed
    unnormalised = spec.model.unnormalised_attention
    out = []
    for i in range(n):
        seen = [q for q in range(n) if allowed is None or allowed[i * n + q]]
        Gtu = _matvec(Gt, U[i], zero)
        if unnormalised:
            centre = [zero] * d
            second = [[zero] * d for _ in range(d)]
            for q in seen:
                Gu = _matvec(G, U[q], zero)
                for a in range(d):
                    for b in range(d):
                        second[a][b] += A[i][q] * U[q][a] * Gu[b]
        else:
            base = U[refs[i]]
            offsets = [[U[q][a] - base[a] for a in range(d)] for q in range(n)]
            mean = [sum((A[i][q] * offsets[q][a] for q in seen), zero) for a in range(d)]
            cov = [[zero] * d for _ in range(d)]
            for q in seen:
                w = [offsets[q][a] - mean[a] for a in range(d)]
                for a in range(d):
                    for b in range(d):
                        cov[a][b] += A[i][q] * w[a] * w[b]
            second = _mul(cov, Gt, zero)
        row = [None] * n
        for k in seen:
            w = ([U[k][a] - centre[a] for a in range(d)] if unnormalised else
                 [offsets[k][a] - mean[a] for a in range(d)])
            block = [[A[i][k] * ((1 if a == b else 0) + w[a] * Gtu[b]) for b in range(d)]
                     for a in range(d)]
            if k == i:
                block = [[block[a][b] + second[a][b] for b in range(d)] for a in range(d)]
            row[k] = block
        out.append(row)
    return out


def _times(V, blk: list[list], zero) -> list[list]:
    """``V blk`` (``V`` an ``arb_mat``), with a shortcut for ``V = c I``."""
    d = V.nrows()
    entries = V.entries()
    c = entries[0]
    if all(entries[a * d + b] == (c if a == b else 0) for a in range(d) for b in range(d)):
        return [[c * v for v in row] for row in blk]
    return _mul(V.tolist(), blk, zero)


def _core(spec, rows: list[list], A_heads: list, G_heads: list, references: list,
          zero) -> list[list]:
    """The blocks ``J[i][k]`` from the tokens ``rows``, the attention of each head, its form
    ``G`` and its reference columns (generic scalars)."""
    n, d = len(rows), len(rows[0])
    model = spec.model
    identity = [[(1 if a == b else 0) for b in range(d)] for a in range(d)]
    blocks = [[None] * n for _ in range(n)]

    def add(i, k, M):
        blocks[i][k] = M if blocks[i][k] is None else [
            [blocks[i][k][a][b] + M[a][b] for b in range(d)] for a in range(d)]

    if spec.rescaled:
        V = spec.heads[0][1]
        M = _blocks(spec, A_heads[0], rows, G_heads[0], references[0], zero)
        for i in range(n):
            for k in range(n):
                blk = M[i][k]
                if k == i:
                    blk = [[blk[a][b] - identity[a][b] for b in range(d)] for a in range(d)]
                if blk is not None:
                    add(i, k, _times(V, blk, zero))
        return blocks
    if model.pre_ln:
        norms = [sum((v * v for v in row), zero).sqrt() for row in rows]
        U = [[v / s for v in row] for row, s in zip(rows, norms, strict=True)]
        Du = [[[((1 if a == b else 0) - U[k][a] * U[k][b]) / norms[k] for b in range(d)]
               for a in range(d)] for k in range(n)]
    else:
        U, Du = rows, None
    for (_, V), A, G, refs in zip(spec.heads, A_heads, G_heads, references, strict=True):
        M = _blocks(spec, A, U, G, refs, zero)
        for i in range(n):
            for k in range(n):
                if M[i][k] is not None:
                    blk = _times(V, M[i][k], zero)
                    add(i, k, blk if Du is None else _mul(blk, Du[k], zero))
    if model.on_sphere:
        for i in range(n):
            m = [zero] * d
            for (_, V), A in zip(spec.heads, A_heads, strict=True):
                bar = [sum((A[i][q] * U[q][a] for q in range(n)), zero) for a in range(d)]
                m = [t + s for t, s in zip(m, _matvec(V.tolist(), bar, zero), strict=True)]
            x = rows[i]
            sq = sum((v * v for v in x), zero)
            rho = sum((a * b for a, b in zip(m, x, strict=True)), zero) / sq
            P = [[identity[a][b] - x[a] * x[b] / sq for b in range(d)] for a in range(d)]
            for k in range(n):
                if blocks[i][k] is not None:
                    blocks[i][k] = _mul(P, blocks[i][k], zero)
            add(i, i, [[-(x[a] * m[b] / sq - 2 * rho * x[a] * x[b] / sq + rho * identity[a][b])
                        for b in range(d)] for a in range(d)])
    return blocks


def _flatten(blocks, n: int, d: int, zero) -> list[list]:
    rows = []
    for i in range(n):
        for a in range(d):
            row = []
            for k in range(n):
                blk = blocks[i][k]
                row.extend(blk[a] if blk is not None else [zero] * d)
            rows.append(row)
    return rows


def jacobian(spec, times, X, references):
    """The Jacobian of ``spec``'s field at every state of the box ``X`` and every time in the
    ball ``times`` (module docstring): an ``nd × nd`` ``arb_mat`` or ``acb_mat``, entry
    ``(i·d + a, k·d + b)`` being :math:`\\partial F_{i,a} / \\partial x_{k,b}`."""
    n, d = X.nrows(), X.ncols()
    rows = X.tolist()
    zero = 0 * rows[0][0]
    A_heads = spec.attention_values(times, X, references)
    if spec.rescaled:
        B, V = spec.heads[0]
        E = (V * times).exp()
        G_heads = [(E.transpose() * B * E).tolist()]
    else:
        G_heads = [B.tolist() for B, _ in spec.heads]
    return type(X)(_flatten(_core(spec, rows, A_heads, G_heads, references, zero), n, d,
                                  zero))


def jacobian_series(spec, jets: dict, length: int) -> list:
    """The first ``length`` Taylor coefficients (``nd × nd`` ``arb_mat``) of
    :math:`s \\mapsto DF(t_0 + s, x(s))` along the solutions whose jets ``jets`` holds (from
    :meth:`verify.enclosure._fields.FieldSpec.jets`: the state's coefficients, each head's
    attention coefficients and, for the rescaled form, :math:`E(t_0 + s)`'s).

    The plain softmax fields (rescaled form, or token form without pre-LN and the sphere) go
    through :func:`_softmax_series` (products of coefficient matrices); the others through
    :func:`_core` on ``arb_series`` entries (same formulas, entry by entry)."""
    model = spec.model
    G_heads = _forms(spec, jets, length)
    if not (model.unnormalised_attention or model.pre_ln or model.on_sphere):
        U = jets["state"][:length]
        total = None
        for (_, V), A, G, refs in zip(spec.heads, jets["attention"], G_heads,
                                      jets["references"], strict=True):
            blocks = _softmax_series(U, A[:length], G, refs, V, length, spec.rescaled)
            total = blocks if total is None else [a + b for a, b in zip(total, blocks,
                                                                        strict=True)]
        return total
    return _series_by_entries(spec, jets, G_heads, length)


def _forms(spec, jets: dict, length: int) -> list:
    """Per head, the coefficients of the form :math:`G`: of :math:`E(t_0 + s)^\\top B\\,
    E(t_0 + s)` for the rescaled form (``length`` of them), else the constant :math:`\\beta
    B_h` (one)."""
    if not spec.rescaled:
        return [[B] for B, _ in spec.heads]
    B, E = spec.heads[0][0], jets["time"]
    d = B.nrows()
    return [[sum((E[a].transpose() * B * E[m - a] for a in range(m + 1)), arb_mat(d, d))
             for m in range(length)]]


def _cauchy(P: list, Q: list, length: int) -> list:
    """The first ``length`` coefficients of the product of two matrix series given by their
    coefficient lists (a list of one: a constant)."""
    out = []
    for m in range(length):
        lo, hi = max(0, m - len(Q) + 1), min(m, len(P) - 1)
        if lo > hi:
            out.append(arb_mat(P[0].nrows(), Q[0].ncols()))
            continue
        total = P[lo] * Q[m - lo]
        for j in range(lo + 1, hi + 1):
            total += P[j] * Q[m - j]
        out.append(total)
    return out


def _softmax_series(U: list, A: list, G: list, refs: list[int], V, length: int,
                    rescaled: bool) -> list:
    r"""The coefficients of the blocks :math:`V M_{ik}` — :math:`V (M_{ii} - I)` on the
    diagonal for the rescaled form — (module docstring) as ``nd × nd`` matrices, from the
    coefficient matrices of the tokens ``U`` (``n × d``), the attention ``A`` (``n × n``), the
    form ``G`` (``d × d``; one coefficient: a constant) and the reference columns ``refs``,
    with products of coefficient matrices (Cauchy products in :math:`s`) instead of series
    entry by entry. Per row :math:`i` with reference :math:`r`: the offsets :math:`o_k = u_k -
    u_r` (row :math:`r` exactly 0), the mean :math:`\mu_i = \sum_q A_{iq} o_q`,
    :math:`w_{ik} = o_k - \mu_i`, :math:`g_i = G^\top u_i`, :math:`C_i = \sum_q A_{iq} w_{iq}
    w_{iq}^\top` and

    .. math:: M_{ik} = A_{ik} \big(I + w_{ik}\, g_i^\top\big) + \delta_{ik}\, C_i G^\top,

    each factor formed in the order of :func:`_blocks` (the attention multiplies
    :math:`I + w g^\top`, not its two terms apart: that was measured 4–5 % wider at the end of
    an enclosure)."""
    n, d = U[0].nrows(), U[0].ncols()
    ones = arb_mat(n, 1, [1] * n)
    offsets, weighted = {}, {}
    for r in sorted(set(refs)):
        centre = arb_mat(n, n, [(1 if q == j else 0) - (1 if j == r else 0)
                                for q in range(n) for j in range(n)])
        offsets[r] = [centre * u for u in U]
        weighted[r] = _cauchy(A, offsets[r], length)  # row i: the mean of row i
    g = _cauchy(U, G, length)  # row i: g_i^T = u_i^T G
    Gt = [c.transpose() for c in G]
    # I + w g^T for the rows (k, a) of a row's blocks: the 1 of column a (coefficient 0)
    identities = arb_mat(n * d, d, [1 if b == a else 0 for k in range(n) for a in range(d)
                                    for b in range(d)])
    # entry (k, a·d + b) of the n × d² layout goes to (a, k·d + b) of the d × nd one
    layout = [k * d * d + a * d + b for a in range(d) for k in range(n) for b in range(d)]
    A_entries = [c.entries() for c in A]
    means = {r: [c.entries() for c in weighted[r]] for r in weighted}
    g_entries = [c.entries() for c in g]
    rows: list[list] = [[] for _ in range(length)]
    for i in range(n):
        r = refs[i]
        W, scale, g_i = [], [], []
        for m in range(length):
            mean = arb_mat(1, d, means[r][m][i * d:(i + 1) * d])
            W.append(offsets[r][m] - ones * mean)  # row k: w_ik^T
            D = arb_mat(n, n)
            for q in range(n):
                D[q, q] = A_entries[m][i * n + q]
            scale.append(D)
            g_i.append(arb_mat(1, d, g_entries[m][i * d:(i + 1) * d]))
        second = _cauchy(_cauchy([w.transpose() for w in W], _cauchy(scale, W, length),
                                 length), Gt, length)  # C_i G^T
        outer = _cauchy([arb_mat(n * d, 1, w.entries()) for w in W], g_i, length)
        outer[0] = outer[0] + identities  # rows (k, a): I + w_ik g_i^T
        blocks = _cauchy(scale, [arb_mat(n, d * d, c.entries()) for c in outer], length)
        for m in range(length):
            entries = blocks[m].entries()
            flat = [entries[j] for j in layout]  # d × nd: row a, column (k, b)
            extra = second[m].entries()
            for a in range(d):
                for b in range(d):
                    at = a * n * d + i * d + b
                    flat[at] = flat[at] + extra[a * d + b]
                    if rescaled and m == 0 and a == b:
                        flat[at] = flat[at] - 1
            rows[m].extend((V * arb_mat(d, n * d, flat)).entries())
    return [arb_mat(n * d, n * d, entries) for entries in rows]


def _series_by_entries(spec, jets: dict, G_heads: list, length: int) -> list:
    """:func:`jacobian_series` by :func:`_core` on ``arb_series`` entries (every variant)."""
    def series(coefficients: list, i: int, j: int):
        return arb_series([c[i, j] for c in coefficients[:length]])

    old = ctx.cap
    ctx.cap = length
    try:
        X = jets["state"]
        n, d = X[0].nrows(), X[0].ncols()
        rows = [[series(X, i, a) for a in range(d)] for i in range(n)]
        A_heads = [[[series(A, i, j) for j in range(n)] for i in range(n)]
                   for A in jets["attention"]]
        G_heads = [[[series(G, a, b) for b in range(d)] for a in range(d)] if len(G) > 1
                   else G[0].tolist() for G in G_heads]
        zero = 0 * rows[0][0]
        flat = _flatten(_core(spec, rows, A_heads, G_heads, jets["references"], zero), n,
                        d, zero)
    finally:
        ctx.cap = old
    columns = [_coefficients(v, length) for row in flat for v in row]
    m = n * d
    return [arb_mat(m, m, [c[power] for c in columns]) for power in range(length)]


def _coefficients(value, length: int) -> list:
    """The first ``length`` coefficients of an ``arb_series`` (or of a constant)."""
    if isinstance(value, arb_series):
        coefficients = value.coeffs()[:length]
        return coefficients + [0] * (length - len(coefficients))
    return [value] + [0] * (length - 1)
