"""LayerNorm backward over the last dimension: dx, dw and db from saved statistics.

Forward (not computed here): y = (x - mean) * rstd * w + b over rows of N, with
mean[m] = mean_n(x[m, n]) and rstd[m] = 1 / sqrt(var_n(x[m, n]) + eps) saved in fp32.
Given dy, with everything in fp32:

    xhat[m, n] = (x[m, n] - mean[m]) * rstd[m]
    g[m, n]    = w[n] * dy[m, n]
    c1[m]      = mean_n(xhat[m, n] * g[m, n])
    c2[m]      = mean_n(g[m, n])
    dx[m, n]   = rstd[m] * (g[m, n] - xhat[m, n] * c1[m] - c2[m])      -> x's dtype
    dw[n]      = sum_m dy[m, n] * xhat[m, n]                           -> w's dtype
    db[n]      = sum_m dy[m, n]                                        -> w's dtype

This is what autograd computes for F.layer_norm(x, (N,), w, b, eps) given dy
(aten.native_layer_norm_backward with the saved mean and rstd), evaluated in fp32 and rounded
once. x, dy, w, dx, dw, db share one dtype (bfloat16 on the GPU, float16 under the CPU
interpreter); mean and rstd are float32 [M].
"""
import torch


def reference(x, w, dy, mean, rstd):
    N = x.shape[-1]
    xf, dyf, wf = x.float(), dy.float(), w.float()
    m, r = mean.float()[:, None], rstd.float()[:, None]
    xhat = (xf - m) * r
    g = wf * dyf
    c1 = (xhat * g).sum(-1, keepdim=True) / N
    c2 = g.sum(-1, keepdim=True) / N
    dx = r * (g - xhat * c1 - c2)
    dw = (dyf * xhat).sum(0)
    db = dyf.sum(0)
    return dx.to(x.dtype), dw.to(w.dtype), db.to(w.dtype)


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """x with a per-row offset and scale, w = 1 + 0.1 randn, dy = randn, and the mean and rstd
    the forward pass would have saved for this x (fp32, biased variance, params.eps)."""
    M, N = axes["M"], axes["N"]
    dtype = dtypes["dtype"]
    eps = float(params.get("eps", 1e-5))

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32)

    shift = 0.5 * randn(M, 1)
    scale = 0.5 + 1.5 * torch.rand((M, 1), generator=generator, device=device, dtype=torch.float32)
    x = (randn(M, N) * scale + shift).to(dtype)
    w = (1.0 + 0.1 * randn(N)).to(dtype)
    dy = randn(M, N).to(dtype)
    xf = x.float()
    mean = xf.mean(-1)
    rstd = torch.rsqrt(xf.var(-1, unbiased=False) + eps)
    return {"x": x, "w": w, "dy": dy, "mean": mean, "rstd": rstd}
