"""Production baseline: flash-linear-attention (fla-core)'s fused_recurrent gated delta rule.

Maps the task onto fla's conventions (checked against fla-core 0.6.0,
fla/ops/gated_delta_rule/fused_recurrent.py):
  * q, k: [B, T=1, HQK, K] and v: [B, 1, HV, V] are fla's [B, T, H, K] / [B, T, HV, V] as they
    are (fla maps value head hv to q/k head hv // (HV // H), as the task does);
  * use_gate_in_kernel=True with g = a (raw, [B, 1, HV]), A_log and dt_bias: fla computes
    g = -exp(A_log) * softplus(a + dt_bias) in the kernel and decays the state by exp(g)
    (g in log space), the task's gate;
  * beta = b with use_beta_sigmoid_in_kernel=True: beta = sigmoid(b) in the kernel
    (allow_neg_eigval stays False);
  * use_qk_l2norm_in_kernel=True: q / sqrt(sum q^2 + 1e-6), likewise k: the task's norm;
  * scale is passed through (fla multiplies q^ by it, the task multiplies S @ q^: the same);
  * state_v_first=True: fla's state is then [N, HV, V, K], the task's k-last layout (fla's
    default is k-first [N, HV, K, V]);
  * fla's kernel reads initial_state[n] and writes a new final_state[n] for sequence n, with
    no slot indices: the adapter gathers the pool slots into a dense [B, HV, V, K] tensor and
    copies fla's final state back into them (index_select / index_copy_), two extra passes
    over the touched states that the task's in-place kernel does not make.
Older fla-core releases without use_gate_in_kernel / state_v_first get the gates computed by
torch and the states transposed to k-first.
Returns o [B, 1, HV, V] in v's dtype (fla allocates it as empty_like(v)).
"""
import inspect

try:
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("fla-core is not installed: pip install fla-core") from exc

import torch
import torch.nn.functional as F

_PARAMS = set(inspect.signature(fused_recurrent_gated_delta_rule).parameters)
_FUSED_GATES = {"use_gate_in_kernel", "use_beta_sigmoid_in_kernel", "state_v_first"} <= _PARAMS


def run(q, k, v, state, state_indices, A_log, a, dt_bias, b, scale):
    idx = state_indices.long()
    h0 = state.index_select(0, idx)                      # [B, HV, V, K], dense per sequence
    if _FUSED_GATES:
        o, ht = fused_recurrent_gated_delta_rule(
            q, k, v, g=a, beta=b, scale=float(scale), initial_state=h0, output_final_state=True,
            use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
            use_beta_sigmoid_in_kernel=True, state_v_first=True,
        )
    else:
        g = -torch.exp(A_log.float()) * F.softplus(a.float() + dt_bias.float())   # [B, 1, HV]
        beta = torch.sigmoid(b.float())
        o, ht = fused_recurrent_gated_delta_rule(
            q, k, v, g=g, beta=beta, scale=float(scale),
            initial_state=h0.transpose(-1, -2).contiguous(), output_final_state=True,
            use_qk_l2norm_in_kernel=True,
        )
        ht = ht.transpose(-1, -2)
    state.index_copy_(0, idx, ht.to(state.dtype))
    return o.to(v.dtype)
