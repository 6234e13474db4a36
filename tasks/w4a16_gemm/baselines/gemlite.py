"""Production baseline: gemlite (mobiusml/gemlite, PyPI `gemlite`), Triton low-bit GEMV/GEMM.

What it computes: exactly the task, C = A @ ((q - 8) * S) with the GPTQ-packed Wq.

How: gemlite's own 4-bit layout with a 32-bit packing width is the GPTQ layout: it packs 8
codes along K into one int32, code i in bits 4i..4i+3, stored [K/8, N] contiguous (checked on
the CPU against the task's packing: bit-identical), and its "W_group_mode 3" dequantizes
(W_q - zero) * scale with a scalar zero and [K/128, N] scales, which are the task's S. So no
repacking is needed and nothing is cached across calls but shape metadata: the first call for a
(K, N, dtype) builds a GemLiteLinearTriton once from dummy weights of that shape (to obtain
gemlite's meta arguments and its zero-point tensor), after which every call passes the task's
Wq and S straight to gemlite.core.forward_functional, which picks gemlite's kernel by M
(GEMV_REVSPLITK for M <= 4, GEMM_SPLITK below 64, GEMM above) and autotunes it on first use.
"""
import torch

if not torch.cuda.is_available():
    raise ImportError("a CUDA GPU is absent: gemlite runs Triton kernels on NVIDIA GPUs "
                      "(run this baseline on the GPU machine)")
try:
    import gemlite
    from gemlite.core import GemLiteLinearTriton, forward_functional
    from gemlite.dtypes import TORCH_TO_DTYPE
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"gemlite is not installed ({exc}): pip install gemlite (needs triton >= 3.6)") from exc

GROUP = 128
ZERO = 8
_META = {}


def _meta(K, N, dtype, device):
    key = (K, N, dtype, str(device))
    hit = _META.get(key)
    if hit is not None:
        return hit
    gdt = TORCH_TO_DTYPE[dtype]
    layer = GemLiteLinearTriton(W_nbits=4, group_size=GROUP, in_features=K, out_features=N,
                                input_dtype=gdt, output_dtype=gdt)
    layer.pack(torch.zeros((N, K), dtype=torch.uint8, device=device),
               torch.ones((N, K // GROUP), dtype=dtype, device=device),
               ZERO, bias=None)
    w_q, scales, zeros, meta_scale = layer.get_tensor_args()
    if tuple(w_q.shape) != (K // 8, N) or not w_q.is_contiguous() or w_q.dtype != torch.int32:
        raise RuntimeError(f"gemlite {gemlite.__version__} packs 4-bit weights as {tuple(w_q.shape)} "
                           f"{w_q.dtype} (contiguous={w_q.is_contiguous()}), not the GPTQ [K/8, N] int32")
    if tuple(scales.shape) != (K // GROUP, N):
        raise RuntimeError(f"gemlite {gemlite.__version__} lays scales out as {tuple(scales.shape)}, "
                           f"not [K/128, N]")
    hit = (layer.get_meta_args(), zeros, meta_scale)
    _META[key] = hit
    del layer
    return hit


def run(A, Wq, S):
    M, K = A.shape
    N = Wq.shape[1]
    meta_args, zeros, meta_scale = _meta(K, N, A.dtype, A.device)
    return forward_functional(A.contiguous(), None,
                              [Wq.contiguous(), S.contiguous(), zeros, meta_scale], meta_args)
