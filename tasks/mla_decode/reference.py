"""DeepSeek MLA decode (weights absorbed) over a paged latent cache, one query token per sequence.

Inputs: q_nope [B, H, 512] and q_pe [B, H, 64] (the absorbed no-position and rotary parts of
each query head), ckv_cache [NP, PS, 512] (the compressed latent c_kv of every cached token, which
serves as both key and value) and kpe_cache [NP, PS, 64] (the shared rotary key), a page table
(kv_indptr [B + 1], kv_indices, kv_last_page_len [B], all int32; sequence b owns pages
kv_indices[kv_indptr[b]:kv_indptr[b + 1]], all full except the last, which holds
kv_last_page_len[b] tokens) and sm_scale. With K_b = [ckv ‖ kpe] of sequence b's tokens
(length L_b >= 1), for every head h:

    s[j]      = sm_scale * (q_nope[b, h] . ckv_j + q_pe[b, h] . kpe_j)     j < L_b
    lse[b, h] = ln(sum_j exp(s[j]))                                       (float32)
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * ckv_j                        (q's dtype, 512 wide)

The reference gathers each sequence's pages and computes in float32 (TF32 off).
"""

import torch

DC, DR = 512, 64


def _lengths(kv_indptr, kv_last_page_len, page_size):
    pages = (kv_indptr[1:] - kv_indptr[:-1]).long()
    return torch.where(pages > 0, (pages - 1) * page_size + kv_last_page_len.long(), torch.zeros_like(pages))


# Not perturbed between timed calls: the page-table offsets, which must increase. kv_indices and
# kv_last_page_len are perturbed: pages and last-page lengths trade places between sequences,
# which leaves a valid table (every length stays >= 1).
FIXED_INPUTS = {"kv_indptr"}


def reference(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    B, H, _ = q_nope.shape
    PS = ckv_cache.shape[1]
    lengths = _lengths(kv_indptr, kv_last_page_len, PS).tolist()
    indptr = kv_indptr.tolist()
    o = torch.zeros((B, H, DC), dtype=q_nope.dtype, device=q_nope.device)
    lse = torch.full((B, H), float("-inf"), dtype=torch.float32, device=q_nope.device)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for b in range(B):
            L = lengths[b]
            if L <= 0:
                continue
            pages = kv_indices[indptr[b]:indptr[b + 1]].long()
            ckv = ckv_cache[pages].reshape(-1, DC)[:L].float()             # [L, 512]
            kpe = kpe_cache[pages].reshape(-1, DR)[:L].float()             # [L, 64]
            s = (q_nope[b].float() @ ckv.T + q_pe[b].float() @ kpe.T) * sm_scale   # [H, L]
            lse_b = torch.logsumexp(s, dim=-1)
            p = torch.exp(s - lse_b[:, None])
            o[b] = (p @ ckv).to(q_nope.dtype)
            lse[b] = lse_b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return o, lse


def make_inputs(axes, dtypes, params, generator, device):
    """The page table, shuffled from the seed; q and the caches come from `init` (randn).

    Sequence lengths: params.seq_lens (a frozen list) or params.ctx for every sequence. Sequence
    b needs ceil(L_b / PS) pages; the pool has exactly NP = sum of them, and kv_indices is a
    random permutation of the pool, so every sequence's pages are scattered across it.
    """
    B, PS, NP = axes["B"], axes["PS"], axes["NP"]
    if "seq_lens" in params:
        lens = [int(x) for x in params["seq_lens"]]
    else:
        lens = [int(params["ctx"])] * B
    if len(lens) != B or min(lens) < 1:
        raise ValueError(f"need B={B} sequence lengths >= 1, got {lens}")
    pages = [-(-n // PS) for n in lens]
    if sum(pages) != NP or sum(lens) != axes["KV"]:
        raise ValueError(f"lengths {lens} need {sum(pages)} pages and {sum(lens)} tokens; "
                         f"the workload says NP={NP}, KV={axes['KV']}")
    indptr = [0]
    for n in pages:
        indptr.append(indptr[-1] + n)
    perm = torch.randperm(NP, generator=generator, device=device).to(torch.int32)
    last = [n - (p - 1) * PS for n, p in zip(lens, pages)]
    return {
        "kv_indptr": torch.tensor(indptr, dtype=torch.int32, device=device),
        "kv_indices": perm,
        "kv_last_page_len": torch.tensor(last, dtype=torch.int32, device=device),
    }
