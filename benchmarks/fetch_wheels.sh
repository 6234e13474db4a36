#!/usr/bin/env bash
# Fills .whl/ (git-ignored through .git/info/exclude; carry it to the device) with what the GPU
# image lacks: d2k's own dependencies for CPython 3.12 on manylinux, and the library baselines
# (fla-core, einops, gemlite). gemlite ships as an sdist only, so a wheel is built from it here
# (pure Python). Run once on a fresh checkout, on a machine with network access.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
grep -qxF ".whl/" .git/info/exclude 2>/dev/null || printf '.whl/\nsnap/\n' >> .git/info/exclude
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl \
  pydantic duckdb tree-sitter tree-sitter-python tree-sitter-cuda typer rich networkx regex
python3 -m pip download -q --no-deps -d .whl fla-core einops
tmp=$(mktemp -d)
python3 -m pip download -q --no-deps --no-binary=:all: -d "$tmp" gemlite
python3 -m pip wheel -q --no-deps "$tmp"/gemlite-* -w .whl
rm -rf "$tmp"
ls .whl
