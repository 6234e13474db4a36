"""Per-token-group (1x128) dynamic FP8 quantization, plain Triton implementation.

For x: [T, K] (K = 128 * G) computes, per token t and group g,

    s[t, g] = max(max_i |x[t, 128 g + i]|, 1e-10) / 448
    q[t, 128 g + i] = clamp(x[t, 128 g + i] / s[t, g], -448, 448) -> float8_e4m3fn

One program per 128-element group (T * G programs, 1 warp each), an fp32 division per element;
the scale is stored at s[t, g] (row-major [T, G]) or s[g, t] of the [G, ceil(T/4)*4] buffer
(scale_col_major = 1).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _group_quant_naive_kernel(X, Q, S, G, s_t_stride, s_g_stride, GROUP_SIZE: tl.constexpr):
    """Group pid = t * G + g: s = max(amax|x|, 1e-10) / 448 at S[t * s_t_stride + g * s_g_stride],
    q = clamp(x / s, +-448) -> fp8."""
    pid = tl.program_id(0)
    t = pid // G
    g = pid % G
    cols = tl.arange(0, GROUP_SIZE)
    x = tl.load(X + pid * GROUP_SIZE + cols).to(tl.float32)
    s = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10) / 448.0
    q = tl.clamp(x / s, -448.0, 448.0)
    tl.store(Q + pid * GROUP_SIZE + cols, q.to(Q.dtype.element_ty))
    tl.store(S + t * s_t_stride + g * s_g_stride, s)


def run(x, scale_col_major):
    T, K = x.shape
    G = K // 128
    x = x.contiguous()
    q = torch.empty((T, K), dtype=torch.float8_e4m3fn, device=x.device)
    if int(scale_col_major):
        s = torch.empty((G, (T + 3) // 4 * 4), dtype=torch.float32, device=x.device)
        strides = (1, s.stride(0))
    else:
        s = torch.empty((T, G), dtype=torch.float32, device=x.device)
        strides = (G, 1)
    if T * G > 0:
        _group_quant_naive_kernel[(T * G,)](x, q, s, G, strides[0], strides[1], GROUP_SIZE=128,
                                           num_warps=1)
    return q, s
