# Sourced by the device scripts: installs what the GPU image lacks from the carried wheels in
# .whl/ (pip resolves against what is already installed and takes only the missing pieces),
# and points d2k at $OUT. Fetch the wheels here first (benchmarks/fetch_wheels.sh does all of it):
#   python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     pydantic duckdb tree-sitter tree-sitter-python tree-sitter-cuda typer rich networkx regex
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --find-links .whl --no-compile \
  pydantic duckdb tree-sitter tree-sitter-python tree-sitter-cuda typer rich networkx regex || exit 1
# the library baselines (tasks/*/baselines/) where their wheels were carried: every script that
# times a baseline gets them (session 27's variants sweep skipped fla-core: only content_b_h200.sh
# installed it)
for whl in .whl/fla_core-*.whl .whl/einops-*.whl .whl/gemlite-*.whl; do
  [[ -e $whl ]] && python3 -m pip install -q --no-index --no-deps --no-compile "$whl" 2>&1 | tail -2
done
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export D2K_DB=${D2K_DB:-$OUT/d2k.duckdb} D2K_WORKDIR=${D2K_WORKDIR:-/tmp/d2kwork}
# a stage's timeout: its own limit ($1 s), or what is left before the caller's $DEADLINE (epoch
# seconds) if that is less, never below 1 s
budget() { local left=$(( ${DEADLINE:?set DEADLINE before budget} - $(date +%s) )); (( left < $1 )) && echo $(( left > 1 ? left : 1 )) || echo "$1"; }
