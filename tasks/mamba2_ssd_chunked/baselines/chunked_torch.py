"""Eager PyTorch baseline: the chunked SSD form (like mamba_ssm's ssd_minimal), for timing
against the experts when the token-by-token reference is too slow to be a fair eager baseline.
Not a design under test. All arithmetic in fp32 (matmuls follow torch's TF32 setting).

Per chunk of Q = 256 tokens (vectorised over batch, heads and all chunks at once):
  cs = cumsum(dt * A) within the chunk
  y_intra = ((C B^T) * exp(cs_i - cs_j) [j <= i] * dt_j) x
  chunk states s_c = x^T (B * exp(cs_last - cs) * dt)
then a Python loop over chunks passes the states (h_c = exp(cs_last) h_{c-1} + s_c), and
y = y_intra + exp(cs_i) C h_{c-1} + D x.
"""

import torch
import torch.nn.functional as F

Q = 256


@torch.no_grad()
def run(x, dt, dt_bias, A, B, C, D):
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    R = H // G
    nc = (L + Q - 1) // Q
    pad = nc * Q - L
    dtp = F.softplus(dt.float() + dt_bias.float())                               # [b, L, H]
    xf = x.float()
    if pad:
        dtp = F.pad(dtp, (0, 0, 0, pad))                                         # dt = 0 past L
        xf = F.pad(xf, (0, 0, 0, 0, 0, pad))
        Bf = F.pad(B.float(), (0, 0, 0, 0, 0, pad))
        Cf = F.pad(C.float(), (0, 0, 0, 0, 0, pad))
    else:
        Bf, Cf = B.float(), C.float()
    xc = xf.view(batch, nc, Q, H, P)
    Bc = Bf.view(batch, nc, Q, G, N).repeat_interleave(R, dim=3)                 # [b, c, Q, H, N]
    Cc = Cf.view(batch, nc, Q, G, N).repeat_interleave(R, dim=3)
    dtc = dtp.view(batch, nc, Q, H).permute(0, 1, 3, 2)                          # [b, c, H, Q]
    cs = torch.cumsum(dtc * A.float()[:, None], dim=-1)                          # [b, c, H, Q]
    causal = torch.ones(Q, Q, dtype=torch.bool, device=x.device).tril()
    seg = (cs[..., :, None] - cs[..., None, :]).masked_fill(~causal, float("-inf"))
    scores = torch.einsum("bcihn,bcjhn->bchij", Cc, Bc) * torch.exp(seg) * dtc[..., None, :]
    y = torch.einsum("bchij,bcjhp->bcihp", scores, xc)
    w = torch.exp(cs[..., -1:] - cs) * dtc                                       # [b, c, H, Q]
    states = torch.einsum("bcjhp,bcjhn,bchj->bchpn", xc, Bc, w)
    h = torch.zeros(batch, H, P, N, dtype=torch.float32, device=x.device)
    prev = torch.empty(batch, nc, H, P, N, dtype=torch.float32, device=x.device)
    for c in range(nc):
        prev[:, c] = h
        h = h * torch.exp(cs[:, c, :, -1])[..., None, None] + states[:, c]
    y = y + torch.einsum("bcihn,bchpn->bcihp", Cc, prev) * torch.exp(cs).permute(0, 1, 3, 2)[..., None]
    y = y.reshape(batch, nc * Q, H, P)[:, :L] + D.float()[:, None] * x.float()
    return y.to(x.dtype), h
