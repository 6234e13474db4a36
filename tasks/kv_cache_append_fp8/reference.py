"""Append new K/V tokens to a paged FP8 KV cache (vLLM reshape_and_cache_flash, fp8 cache).

key, value: [T, Hkv, D]; key_cache, value_cache: [NB, PS, Hkv, D] float8_e4m3fn (NHD pages);
slot_mapping: [T] int64; k_scale, v_scale: 0-d float32. For every token i with
s = slot_mapping[i] >= 0:

    key_cache[s // PS, s % PS]   = clamp(key[i].float()   / k_scale, -448, 448).to(float8_e4m3fn)
    value_cache[s // PS, s % PS] = clamp(value[i].float() / v_scale, -448, 448).to(float8_e4m3fn)

Tokens with slot -1 (padding) write nothing; every other slot of the caches is left unchanged.
The clamp is the saturating conversion of vLLM's CUDA kernel (__NV_SATFINITE) and of the GPU's
cvt.rn.satfinite; the workloads' scales keep |x / scale| below 448, so it rarely matters.
"""
import torch

FP8_MAX = 448.0


def reference(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
    PS = key_cache.shape[1]
    valid = slot_mapping >= 0
    slots = slot_mapping[valid]
    block, offset = slots // PS, slots % PS
    for src, cache, scale in ((key, key_cache, k_scale), (value, value_cache, v_scale)):
        q = (src[valid].float() / scale).clamp(-FP8_MAX, FP8_MAX).to(cache.dtype)
        cache[block, offset] = q
    return None


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """slot_mapping and the scales; key, value and the stale cache contents come from `init`.

    params.slot_pattern:
      "paged":  the tokens fill ceil(T / PS) distinct random pages in order (a prefill writing
                whole pages of freshly allocated blocks);
      "random": T distinct slots drawn uniformly from the pool (decode steps of unrelated
                sequences, or a fragmented pool).
    params.pad_frac: share of tokens (chosen at random) whose slot is -1 (padding).
    k_scale, v_scale ~ U(0.015, 0.03): with key, value ~ N(0, 1), |x / scale| stays below ~400,
    spread over the whole e4m3 range (as calibrated amax / 448 scales place it).
    params.exact_fp8 = 1 (smoke workloads only): the scales are 1.25 * 2^-5 and 1.75 * 2^-6
    and key / value are e4m3 values times their scale (exact in fp16 and bf16), so x / scale is
    an e4m3 value and no fp8 rounding happens (x * fl(1 / scale) lands on or just above it,
    since fl(1 / c) > 1 / c for these c, so a reciprocal multiply needs no rounding carry
    either). The CPU interpreter's fp32 -> fp8 cast rounds 2-4 % of inexact values wrongly;
    with exact values the smoke check stays as strict as the GPU's.
    """
    T, NB, PS = axes["T"], axes["NB"], axes["PS"]
    pattern = params.get("slot_pattern", "random")
    pad_frac = float(params.get("pad_frac", 0.0))
    if T > NB * PS:
        raise ValueError(f"T={T} tokens do not fit a pool of {NB} x {PS} slots")
    if pattern == "paged":
        pages = torch.randperm(NB, generator=generator, device=device)[: -(-T // PS)]
        tok = torch.arange(T, device=device)
        slots = pages[tok // PS] * PS + tok % PS
    elif pattern == "random":
        slots = torch.randperm(NB * PS, generator=generator, device=device)[:T]
    else:
        raise ValueError(f"unknown slot_pattern {pattern!r}")
    if pad_frac > 0:
        pad = torch.rand((T,), generator=generator, device=device) < pad_frac
        slots = torch.where(pad, torch.full_like(slots, -1), slots)
    out = {"slot_mapping": slots.to(torch.int64)}
    if int(params.get("exact_fp8", 0)):
        H, D = axes["Hkv"], axes["D"]
        for name, scale_name, scale in (("key", "k_scale", 1.25 * 2.0**-5), ("value", "v_scale", 1.75 * 2.0**-6)):
            q = torch.randn((T, H, D), generator=generator, device=device, dtype=torch.float32)
            q = q.mul_(100.0).clamp_(-448.0, 448.0).to(torch.float8_e4m3fn).float()
            out[name] = (q * scale).to(dtypes["dtype"])
            out[scale_name] = torch.tensor(scale, dtype=torch.float32, device=device)
        return out
    scales = torch.rand((2,), generator=generator, device=device, dtype=torch.float32) * 0.015 + 0.015
    out["k_scale"], out["v_scale"] = scales[0].clone(), scales[1].clone()
    return out
