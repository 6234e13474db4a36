#!/usr/bin/env bash
# A side virtual environment with another Triton version, for benchmarks/aot_screen.py to compile
# with the GPU image's compiler (the H200 image ran Triton 3.6.0 in 2026-12) while the project's
# own environment keeps its version. Torch and the rest come from the project's .venv through a
# .pth file placed after the side environment's own packages, so its Triton wins.
#   bash benchmarks/triton_venv.sh 3.6.0 /tmp/t36 && /tmp/t36/bin/python benchmarks/aot_screen.py SPEC
set -euo pipefail
(( $# == 2 )) || { echo "usage: triton_venv.sh TRITON_VERSION DIR" >&2; exit 2; }
version=$1; dir=$2
root=$(cd "$(dirname "$0")/.." && pwd)
site=$("$root/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$root/.venv/bin/python" -m venv "$dir"   # the same interpreter, so the project's packages load
# numpy < 2.4 for Triton 3.6 (../shared/machines.md: numpy 2.4 breaks its interpreter)
"$dir/bin/pip" install -q "triton==$version" "numpy<2.4"
own=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$site" > "$own/zz_project_venv.pth"
"$dir/bin/python" -c 'import triton, torch; print(f"triton {triton.__version__} from {triton.__file__}; torch {torch.__version__}")'
