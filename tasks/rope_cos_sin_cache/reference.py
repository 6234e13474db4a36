"""Rotary position embedding of q and k from a precomputed cos/sin cache, in place
(FlashInfer `apply_rope_with_cos_sin_cache_inplace` / vLLM `rotary_embedding` semantics).

cos_sin_cache: [P, RD] float32, row p = [cos(p * f_0 .. p * f_{RD/2-1}), sin(same)].
For token t, cos[t] = cos_sin_cache[positions[t], :RD/2] and sin[t] = cos_sin_cache[positions[t], RD/2:].
For every head of q [T, Hq, D] and of k [T, Hk, D], on the first RD dims, in fp32:

    NeoX style (is_neox = 1):  x1 = x[:RD/2], x2 = x[RD/2:RD]
    GPT-J style (is_neox = 0): x1 = x[0:RD:2], x2 = x[1:RD:2]          (interleaved pairs)
        x1' = x1 * cos - x2 * sin
        x2' = x2 * cos + x1 * sin

written back to the same positions, rounded to q's / k's dtype. Dims RD..D-1 pass through
unchanged. Nothing is returned: q and k are modified in place.
"""
import torch


def _rotate_(x, cos, sin, rd, neox):
    xr = x[..., :rd].float()
    cos = cos[:, None, :]
    sin = sin[:, None, :]
    if neox:
        x1, x2 = xr[..., : rd // 2], xr[..., rd // 2:]
        out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    else:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
    x[..., :rd] = out.to(x.dtype)


def reference(positions, q, k, cos_sin_cache, is_neox):
    rd = cos_sin_cache.shape[-1]
    cos_sin = cos_sin_cache[positions.long()]          # [T, RD] fp32
    cos, sin = cos_sin[:, : rd // 2], cos_sin[:, rd // 2:]
    _rotate_(q, cos, sin, rd, bool(is_neox))
    _rotate_(k, cos, sin, rd, bool(is_neox))
    return None


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """The cos/sin cache for base params.rope_theta over P positions (plain RoPE frequencies,
    inv_freq[i] = theta^(-2i/RD), fp32), and positions: 0..T-1 (params.positions = "arange", one
    prompt) or uniform in [0, params.pos_high) (params.positions = "uniform", a decode batch).
    q and k come from `init` (randn)."""
    T, P, RD = axes["T"], axes["P"], axes["RD"]
    theta = float(params.get("rope_theta", 10000.0))
    inv_freq = 1.0 / (theta ** (torch.arange(0, RD, 2, dtype=torch.float64) / RD))
    t = torch.arange(P, dtype=torch.float64)
    freqs = torch.outer(t, inv_freq)
    cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(torch.float32).to(device)
    if params.get("positions", "arange") == "uniform":
        high = min(int(params.get("pos_high", P)), P)
        positions = torch.randint(0, high, (T,), generator=generator, device=device, dtype=torch.int64)
    else:
        positions = torch.arange(T, device=device, dtype=torch.int64) % P
    return {"positions": positions, "cos_sin_cache": cache}
