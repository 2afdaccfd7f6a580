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

The test-suite checks every variant against the forward-mode jets of the field.
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
    attention coefficients and, for the rescaled form, :math:`E(t_0 + s)`'s)."""
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
        if spec.rescaled:
            B = spec.heads[0][0]
            E = jets["time"]
            G = [sum((E[a].transpose() * B * E[m - a] for a in range(m + 1)),
                     arb_mat(d, d)) for m in range(length)]
            G_heads = [[[series(G, a, b) for b in range(d)] for a in range(d)]]
        else:
            G_heads = [B.tolist() for B, _ in spec.heads]
        zero = 0 * rows[0][0]
        flat = _flatten(_core(spec, rows, A_heads, G_heads, jets["references"], zero), n,
                        d, zero)
    finally:
        ctx.cap = old
    m = n * d
    out = []
    for power in range(length):
        out.append(arb_mat(m, m, [_coefficient(v, power) for row in flat for v in row]))
    return out


def _coefficient(value, power: int):
    if isinstance(value, arb_series):
        coefficients = value.coeffs()
        return coefficients[power] if power < len(coefficients) else 0
    return value if power == 0 else 0
