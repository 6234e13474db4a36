"""MoE align-block-size (vLLM `moe_align_block_size` semantics): sort token->expert pairs by
expert into per-expert segments padded to a multiple of block_size.

    topk_ids: [T, K] int32, every entry an expert id in [0, E).  Pair i = t * K + j.
    cnt[e]    = #{i : topk_ids.flat[i] == e}
    pad[e]    = ceil(cnt[e] / block_size) * block_size
    start[e]  = sum_{e' < e} pad[e'],  total = sum_e pad[e]
    P         = T * K + E * (block_size - 1)           (the largest possible total)

    sorted_token_ids: [P] int32. Positions start[e] .. start[e] + pad[e] - 1 (expert e's segment)
        hold the cnt[e] pair indices i with topk_ids.flat[i] == e, plus pad[e] - cnt[e] copies of
        the sentinel T * K; every position >= total holds the sentinel as well.
    expert_ids: [ceil(P / block_size)] int32. Block b (positions b*bs .. b*bs + bs - 1) belongs to
        the expert whose segment contains it: expert_ids[b] = e for start[e] <= b*bs < start[e]
        + pad[e]; blocks at or past total get -1.
    num_tokens_post_padded: [1] int32 = total.

The order inside a segment is free (a grouped GEMM only needs every block to hold one expert's
pairs), so `canonicalize` sorts each segment before comparison; the reference itself lists each
expert's pairs in increasing pair index, followed by its sentinels.
"""
import torch

# Each timed call gets a new draw of the inputs (d2k/execution/wire.refill): the perturbation
# between calls only moves ids within a row, so every row (and every chunk of whole rows) keeps
# its experts, and the per-expert counts, padded segment starts, expert_ids and the total are the
# same on every call; a solution could keep its histogram from the first call and skip the
# counting launch (benchmarks/studies/2026-12-05-row-stat-audit, SECURITY.md).
FRESH_INPUTS_PER_CALL = True


def _segments(topk_ids, num_experts, block_size):
    flat = topk_ids.reshape(-1).long()
    counts = torch.bincount(flat, minlength=num_experts)[:num_experts]
    padded = (counts + block_size - 1) // block_size * block_size
    ends = torch.cumsum(padded, 0)
    return flat, counts, padded, ends


def reference(topk_ids, num_experts, block_size):
    E, bs = int(num_experts), int(block_size)
    flat, counts, padded, ends = _segments(topk_ids, E, bs)
    numel = flat.numel()
    P = numel + E * (bs - 1)
    dev = topk_ids.device
    starts = ends - padded
    excl = torch.cumsum(counts, 0) - counts
    order = torch.argsort(flat, stable=True)            # grouped by expert, pair index ascending
    e_sorted = flat[order]
    dest = starts[e_sorted] + (torch.arange(numel, device=dev) - excl[e_sorted])
    sorted_ids = torch.full((P,), numel, dtype=torch.int32, device=dev)
    sorted_ids[dest] = order.to(torch.int32)
    total = ends[-1] if E > 0 else torch.zeros((), dtype=torch.long, device=dev)
    n_blocks = (P + bs - 1) // bs
    block_start = torch.arange(n_blocks, device=dev) * bs
    owner = torch.searchsorted(ends, block_start, right=True)
    expert_ids = torch.where(block_start < total, owner, torch.full_like(owner, -1)).to(torch.int32)
    return sorted_ids, expert_ids, total.reshape(1).to(torch.int32)


def canonicalize(outputs: dict, inputs: dict) -> dict:
    """Sort sorted_token_ids inside every expert segment (segments from the inputs' counts;
    positions past the padded total form one more segment). Other outputs are unchanged."""
    out = dict(outputs)
    ids = out.get("sorted_token_ids")
    topk_ids = inputs["topk_ids"]
    E, bs = int(inputs["num_experts"]), int(inputs["block_size"])
    P = topk_ids.numel() + E * (bs - 1)
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.numel() != P:
        return out                                      # the shape check reports it
    _, _, _, ends = _segments(topk_ids, E, bs)
    seg = torch.searchsorted(ends, torch.arange(P, device=ids.device), right=True)
    vals = ids.long()
    by_val = torch.argsort(vals, stable=True)
    by_seg = torch.argsort(seg[by_val], stable=True)
    out["sorted_token_ids"] = vals[by_val][by_seg].to(ids.dtype)
    return out


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """Each token picks K distinct experts, drawn without replacement with probability
    proportional to a per-expert popularity (log-popularity ~ N(0, 0.5^2), fixed per workload
    seed): a mildly unbalanced load like a trained router's. Gumbel-top-K sampling."""
    T, K, E = axes["T"], axes["K"], axes["E"]
    log_pop = 0.5 * torch.randn((E,), generator=generator, device=device)
    u = torch.rand((T, E), generator=generator, device=device).clamp_(1e-12, 1.0 - 1e-7)
    gumbel = -torch.log(-torch.log(u))
    topk_ids = torch.topk(log_pop[None, :] + gumbel, K, dim=1).indices.to(torch.int32)
    return {"topk_ids": topk_ids.contiguous()}
