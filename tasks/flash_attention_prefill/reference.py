"""Causal GQA prefill attention over packed variable-length sequences (forward only).

Inputs: q [total_tokens, Hq, D], k and v [total_tokens, Hkv, D] (Hq % Hkv == 0), cu_seqlens int32
[B + 1] (sequence b owns tokens cu_seqlens[b]:cu_seqlens[b+1]; q_len == kv_len) and the scalar
sm_scale. For each sequence b, query head h and in-sequence positions i, j:

    s[i, j]   = sm_scale * <q[i, h], k[j, h // (Hq // Hkv)]>     for j <= i (causal, aligned at 0)
    lse[i, h] = log(sum_{j <= i} exp(s[i, j]))                   (natural log, fp32)
    o[i, h]   = sum_{j <= i} exp(s[i, j] - lse[i, h]) * v[j, h // (Hq // Hkv)]

Tokens never attend across sequence boundaries. Returns (o in q's dtype, lse in float32).

On CUDA this is the eager PyTorch way to do it: torch's flash SDPA kernel
(aten._scaled_dot_product_flash_attention, which also returns the logsumexp), called once per run
of consecutive equal-length sequences (batched as one [n, H, L, D] view, no copies of q/k/v).
On the CPU it is an explicit fp32 softmax per sequence.
"""

import torch

_FLASH_GQA_OK = None  # whether the flash op accepts Hkv < Hq directly (checked on first use)


def _runs(lengths):
    """Split the sequence lengths into runs of consecutive equal lengths: (start_token, n, L)."""
    runs, start, i = [], 0, 0
    while i < len(lengths):
        j = i
        while j + 1 < len(lengths) and lengths[j + 1] == lengths[i]:
            j += 1
        n = j - i + 1
        runs.append((start, n, lengths[i]))
        start += n * lengths[i]
        i = j + 1
    return runs


def _flash(qb, kb, vb, sm_scale, group):
    global _FLASH_GQA_OK
    if group > 1 and _FLASH_GQA_OK is not False:
        try:
            out = torch.ops.aten._scaled_dot_product_flash_attention(
                qb, kb, vb, 0.0, True, False, scale=sm_scale)
            _FLASH_GQA_OK = True
            return out[0], out[1]
        except RuntimeError:
            _FLASH_GQA_OK = False
    if group > 1:
        kb = kb.repeat_interleave(group, dim=1)
        vb = vb.repeat_interleave(group, dim=1)
    out = torch.ops.aten._scaled_dot_product_flash_attention(
        qb, kb, vb, 0.0, True, False, scale=sm_scale)
    return out[0], out[1]


def _cpu_fp32(qs, ks, vs, sm_scale, group):
    L = qs.shape[0]
    qf = qs.float().transpose(0, 1)                                  # [Hq, L, D]
    kf = ks.float().repeat_interleave(group, dim=1).transpose(0, 1)  # [Hq, L, D]
    vf = vs.float().repeat_interleave(group, dim=1).transpose(0, 1)
    s = torch.matmul(qf, kf.transpose(1, 2)) * sm_scale              # [Hq, L, L]
    causal = torch.ones(L, L, dtype=torch.bool, device=qs.device).tril()
    s = s.masked_fill(~causal, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)                                 # [Hq, L]
    p = torch.exp(s - lse[..., None])
    o = torch.matmul(p, vf)                                          # [Hq, L, D]
    return o.transpose(0, 1), lse.transpose(0, 1)


# Not perturbed between timed calls: the sequence offsets, which must increase.
FIXED_INPUTS = {"cu_seqlens"}


def reference(q, k, v, cu_seqlens, sm_scale):
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    group = Hq // Hkv
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    o = torch.empty_like(q)
    lse = torch.empty((T, Hq), dtype=torch.float32, device=q.device)
    for start, n, L in _runs(lengths):
        if L == 0:
            continue
        end = start + n * L
        if q.is_cuda:
            # [n*L, H, D] -> [n, H, L, D] views; the op works on the [n, L, H, D] memory directly.
            qb = q[start:end].view(n, L, Hq, D).transpose(1, 2)
            kb = k[start:end].view(n, L, Hkv, D).transpose(1, 2)
            vb = v[start:end].view(n, L, Hkv, D).transpose(1, 2)
            ob, lb = _flash(qb, kb, vb, sm_scale, group)             # [n, Hq, L, D], [n, Hq, L]
            o[start:end].view(n, L, Hq, D).copy_(ob.transpose(1, 2))
            lse[start:end].view(n, L, Hq).copy_(lb[:, :, :L].transpose(1, 2))
        else:
            for b in range(n):
                s0 = start + b * L
                ob, lb = _cpu_fp32(q[s0:s0 + L], k[s0:s0 + L], v[s0:s0 + L], sm_scale, group)
                o[s0:s0 + L] = ob.to(q.dtype)
                lse[s0:s0 + L] = lb
    return o, lse


def make_inputs(axes, dtypes, params, generator, device):
    """cu_seqlens from the frozen params.seq_lens; q, k, v standard normal in the workload dtype."""
    seq_lens = [int(n) for n in params["seq_lens"]]
    T, B = axes["total_tokens"], axes["B"]
    Hq, Hkv, D = axes["Hq"], axes["Hkv"], axes["D"]
    if len(seq_lens) != B or sum(seq_lens) != T:
        raise ValueError(f"seq_lens {seq_lens} do not match B={B}, total_tokens={T}")
    if Hq % Hkv:
        raise ValueError(f"Hq={Hq} is not a multiple of Hkv={Hkv}")
    dtype = dtypes["dtype"]
    cu = [0]
    for n in seq_lens:
        cu.append(cu[-1] + n)
    cu_seqlens = torch.tensor(cu, dtype=torch.int32, device=device)

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(dtype)

    return {"q": randn(T, Hq, D), "k": randn(T, Hkv, D), "v": randn(T, Hkv, D),
            "cu_seqlens": cu_seqlens}
