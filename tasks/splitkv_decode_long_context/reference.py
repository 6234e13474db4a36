"""Long-context GQA decode attention (one query token per sequence) over a paged KV cache.

The same operation as paged_decode_gqa (T13); only the workloads differ (1-8 sequences of
32k-128k tokens).

Inputs: q [B, Hq, D]; k_cache, v_cache [NP, PS, Hkv, D] (pool of NP pages of PS token slots,
"NHD" layout); kv_indptr int32 [B + 1]; kv_indices int32 [NI]; kv_last_page_len int32 [B];
sm_scale (float). Sequence b has n_b = (kv_indptr[b+1] - kv_indptr[b] - 1) * PS +
kv_last_page_len[b] tokens, and its token j lives in pool page kv_indices[kv_indptr[b] + j // PS],
slot j % PS. For each sequence b and query head h (kv head g = h // (Hq // Hkv)):

    s[j]      = sm_scale * <q[b, h], k_cache[page(b, j), j % PS, g]>        (j < n_b)
    lse[b, h] = ln(sum_j exp(s[j]))                                          (natural log, fp32)
    o[b, h]   = sum_j exp(s[j] - lse[b, h]) * v_cache[page(b, j), j % PS, g]  (q's dtype)

The reference gathers every sequence's tokens through the page table into a padded
[B, L_max, Hkv, D] tensor, upcasts to fp32 and does a masked softmax: the straightforward eager
PyTorch way (one gather per cache, two batched fp32 matmuls, no per-sequence Python loop).
"""

import torch


def _seq_lens(kv_indptr, kv_last_page_len, page_size):
    n_pages = (kv_indptr[1:] - kv_indptr[:-1]).long()
    return (n_pages - 1) * page_size + kv_last_page_len.long()


# Not perturbed between timed calls: the page-table offsets, which must increase. kv_indices and
# kv_last_page_len are perturbed: pages and last-page lengths trade places between sequences,
# which leaves a valid table (every length stays >= 1).
FIXED_INPUTS = {"kv_indptr"}


def reference(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    B, Hq, D = q.shape
    NP, PS, Hkv, _ = k_cache.shape
    G = Hq // Hkv
    lens = _seq_lens(kv_indptr, kv_last_page_len, PS)                     # [B]
    L = int(lens.max().item())
    pos = torch.arange(L, device=q.device)
    valid = pos[None, :] < lens[:, None]                                   # [B, L]
    entry = kv_indptr[:-1, None].long() + pos[None, :] // PS               # page-table entry
    entry = torch.where(valid, entry, torch.zeros_like(entry))
    rows = kv_indices.long()[entry] * PS + pos[None, :] % PS               # pool token rows
    k = k_cache.reshape(NP * PS, Hkv, D)[rows].float()                     # [B, L, Hkv, D]
    v = v_cache.reshape(NP * PS, Hkv, D)[rows].float()
    qf = q.float().view(B, Hkv, G, D)
    s = torch.einsum("bhgd,blhd->bhgl", qf, k) * sm_scale                  # [B, Hkv, G, L]
    s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)                                       # [B, Hkv, G]
    p = torch.exp(s - lse[..., None])
    o = torch.einsum("bhgl,blhd->bhgd", p, v)                              # [B, Hkv, G, D]
    return o.reshape(B, Hq, D).to(q.dtype), lse.reshape(B, Hq).contiguous()


def make_inputs(axes, dtypes, params, generator, device):
    """The page table: kv_indptr, kv_indices and kv_last_page_len (q and the caches come from
    `init`: standard normal in the workload dtype).

    Sequence lengths: params.seq_lens (a frozen list, ragged) or params.ctx (every sequence the
    same). Each sequence gets cdiv(n_b, PS) pages; the pages of all sequences are the first NI
    entries of a random permutation of the NP pool pages (drawn from `generator`), so a
    sequence's pages are scattered over the pool in random order, and pool pages beyond NI (if
    NP > NI) are never referenced. The unused slots of each last page hold random data that a
    correct kernel must ignore.
    """
    B, PS, NP, NI = axes["B"], axes["PS"], axes["NP"], axes["NI"]
    if "seq_lens" in params:
        lens = [int(n) for n in params["seq_lens"]]
    else:
        lens = [int(params["ctx"])] * B
    if len(lens) != B or min(lens) < 1:
        raise ValueError(f"need {B} sequence lengths >= 1, got {lens}")
    if sum(lens) != axes["KVT"]:
        raise ValueError(f"sequence lengths sum to {sum(lens)}, axes.KVT is {axes['KVT']}")
    if axes["Hq"] % axes["Hkv"]:
        raise ValueError(f"Hq={axes['Hq']} is not a multiple of Hkv={axes['Hkv']}")
    pages = [-(-n // PS) for n in lens]
    if sum(pages) != NI or NI > NP:
        raise ValueError(f"the sequences need {sum(pages)} pages; axes say NI={NI}, NP={NP}")
    indptr = [0]
    for n in pages:
        indptr.append(indptr[-1] + n)
    perm = torch.randperm(NP, generator=generator, device=device)[:NI]
    last = [n - (p - 1) * PS for n, p in zip(lens, pages)]
    i32 = dict(dtype=torch.int32, device=device)
    return {"kv_indptr": torch.tensor(indptr, **i32),
            "kv_indices": perm.to(torch.int32),
            "kv_last_page_len": torch.tensor(last, **i32)}
