"""Production baseline: fla-core's chunk_gated_delta_rule (flash-linear-attention), adapted to
this task's calling convention. Not a design under test; it needs fla-core and a GPU (it is not
meant to run under the Triton interpreter).

Mapping (exact, no extra math): fla takes [B, T, H, K] tensors, so the packed [T, H, K] inputs
get a leading batch of 1 and cu_seqlens (int64) marks the sequences; Hv > Hqk is fla's "GVA";
g is already the log decay fla expects (use_gate_in_kernel=False), beta is post-sigmoid
(use_beta_sigmoid_in_kernel=False), q and k arrive L2-normalised (use_qk_l2norm_in_kernel=False);
scale is passed through; state_v_first=True makes fla read the initial state and write the
final state in this task's k-last [N, Hv, V, K] layout. fla returns o in q's dtype and the final
state in float32.
"""

try:
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("fla-core is not installed: pip install fla-core") from exc


def run(q, k, v, g, beta, state, cu_seqlens, scale):
    o, final_state = chunk_gated_delta_rule(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), g.unsqueeze(0), beta.unsqueeze(0),
        scale=scale,
        initial_state=state,
        output_final_state=True,
        use_qk_l2norm_in_kernel=False,
        use_beta_sigmoid_in_kernel=False,
        state_v_first=True,
        cu_seqlens=cu_seqlens,
    )
    return o.squeeze(0).to(q.dtype), final_state.float()
