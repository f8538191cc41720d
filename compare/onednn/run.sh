#!/usr/bin/env bash
# Builds and runs the relayout / oneDNN comparison, one thread each.
#
#   compare/onednn/run.sh [--size small|full] [--seconds S] [--case NAME]
#
# Unless ONEDNN_DIR names an unpacked oneDNN (with lib/libdnnl.so), downloads the oneDNN v3.2
# wheels from PyPI (onednn-cpu-gomp and onednn-devel-cpu-gomp 2023.2.0, as the project's peers
# harness does) once, and unpacks them into .deps/ beside this script (git-ignored). The
# arguments go to the program; see README.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=2023.2.0 # oneDNN v3.2, built with GNU OpenMP
DEPS="$HERE/.deps"

# Downloads and unpacks the two wheels into $DEPS/onednn-$VERSION/{lib,include}, unless there.
fetch_onednn() {
  local dir="$DEPS/onednn-$VERSION"
  if [ -f "$dir/lib/libdnnl.so" ] && [ -f "$dir/include/oneapi/dnnl/dnnl.h" ]; then
    echo "$dir"
    return
  fi
  echo "run.sh: downloading the oneDNN $VERSION wheels into $DEPS" >&2
  mkdir -p "$DEPS/dl"
  python3 -m pip download -q --no-deps -d "$DEPS/dl" \
    "onednn-cpu-gomp==$VERSION" "onednn-devel-cpu-gomp==$VERSION" >&2
  rm -rf "$dir" "$DEPS/unpacked"
  mkdir -p "$dir/lib" "$dir/include" "$DEPS/unpacked"
  local wheel
  for wheel in "$DEPS"/dl/onednn_cpu_gomp-"$VERSION"-*.whl \
    "$DEPS"/dl/onednn_devel_cpu_gomp-"$VERSION"-*.whl; do
    python3 -m zipfile -e "$wheel" "$DEPS/unpacked"
  done
  cp -a "$DEPS"/unpacked/onednn_cpu_gomp-*.data/data/lib/. "$dir/lib/"
  cp -a "$DEPS"/unpacked/onednn_devel_cpu_gomp-*.data/data/include/. "$dir/include/"
  rm -rf "$DEPS/unpacked"
  # A zip keeps no symlinks: point the linker's and the loader's names at the versioned file.
  local real
  real=$(cd "$dir/lib" && ls libdnnl.so.*.* | head -n1)
  (cd "$dir/lib" && ln -sf "$real" libdnnl.so.3 && ln -sf "$real" libdnnl.so)
  echo "$dir"
}

if [ -z "${ONEDNN_DIR:-}" ]; then
  ONEDNN_DIR=$(fetch_onednn)
fi
export ONEDNN_DIR
export OMP_NUM_THREADS=1
cargo run --release --manifest-path "$HERE/Cargo.toml" -- "$@"
