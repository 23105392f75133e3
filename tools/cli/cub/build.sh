#!/usr/bin/env bash
# Builds the CUB baseline shim (cub_shim.cu) into a shared library for host/src/cub.rs.
#
#   host/cub/build.sh [OUTPUT]   default OUTPUT: libcub_shim.so next to this script
#
# Environment: CUB_ARCH (default sm_90) picks the GPU architecture; NVCC the compiler (default:
# nvcc on PATH, else $CUDA_HOME/bin/nvcc, CUDA_HOME defaulting to /usr/local/cuda);
# CUB_NVCC_FLAGS adds flags. Needs the CUDA toolkit (CUB ships with it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/libcub_shim.so}"
arch="${CUB_ARCH:-sm_90}"
nvcc="${NVCC:-nvcc}"
# nvcc is often not on PATH (e.g. only in /usr/local/cuda/bin): fall back to CUDA_HOME.
if [ -z "${NVCC:-}" ] && ! command -v nvcc >/dev/null 2>&1; then
    nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
fi

if ! command -v "$nvcc" >/dev/null 2>&1; then
    echo "build.sh: $nvcc not found (install the CUDA toolkit or set NVCC)" >&2
    exit 1
fi

"$nvcc" --version
mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2086 # CUB_NVCC_FLAGS is a list of flags
"$nvcc" -O3 -std=c++17 -arch="$arch" -Xcompiler -fPIC -shared ${CUB_NVCC_FLAGS:-} \
    -o "$out" "$here/cub_shim.cu"
echo "built $out (arch $arch)"
