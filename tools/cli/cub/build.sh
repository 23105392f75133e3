#!/usr/bin/env bash
# Builds the CUB baseline shim (cub_shim.cu) into a shared library for tools/cli/src/cub.rs.
#
#   tools/cli/cub/build.sh [OUTPUT [CCCL_DIR]]
#
# Without CCCL_DIR (or $GPU_REDUCE_CCCL) the shim is built against the CUB of nvcc's CUDA
# toolkit; default OUTPUT: libcub_shim.so next to this script. With CCCL_DIR, a checkout of
# github.com/NVIDIA/cccl (its cub/cub, thrust/thrust and libcudacxx/include are enough, as the
# bundle's cccl/ has them) or an installed CCCL (DIR/include), it is built against those headers
# instead, put ahead of the toolkit's with -I as CCCL's README says; default OUTPUT:
# libcub_shim_cccl.so next to this script. The shim checks at compile time that it got the
# checkout's CUB_VERSION.
#
# Environment: CUB_ARCH (default sm_90) picks the GPU architecture; NVCC the compiler (default:
# nvcc on PATH, else $CUDA_HOME/bin/nvcc, CUDA_HOME defaulting to /usr/local/cuda);
# CUB_NVCC_FLAGS adds flags. Needs the CUDA toolkit (CUB ships with it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cccl="${2:-${GPU_REDUCE_CCCL:-}}"
if [ -n "$cccl" ]; then
    out="${1:-$here/libcub_shim_cccl.so}"
else
    out="${1:-$here/libcub_shim.so}"
fi
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

# The CCCL headers' -I directories (the layouts tools/cli/src/cub.rs accepts, in the same order)
# and the CUB_VERSION their cub/version.cuh defines.
includes=()
expect=()
if [ -n "$cccl" ]; then
    if ! root="$(cd "$cccl" 2>/dev/null && pwd)"; then
        echo "build.sh: CCCL checkout $cccl not found" >&2
        exit 1
    fi
    has_all() { [ -f "$1/thrust/version.h" ] && [ -f "$1/cuda/std/version" ] && [ -f "$1/cub/version.cuh" ]; }
    if [ -f "$root/thrust/thrust/version.h" ] && [ -f "$root/libcudacxx/include/cuda/std/version" ] \
        && [ -f "$root/cub/cub/version.cuh" ]; then
        includes=("-I$root/thrust" "-I$root/libcudacxx/include" "-I$root/cub")
        version_h="$root/cub/cub/version.cuh"
    elif has_all "$root/include"; then
        includes=("-I$root/include")
        version_h="$root/include/cub/version.cuh"
    elif has_all "$root"; then
        includes=("-I$root")
        version_h="$root/cub/version.cuh"
    else
        echo "build.sh: $root is not a CCCL checkout (expected cub/cub/version.cuh," \
            "thrust/thrust/version.h and libcudacxx/include/cuda/std/version)" >&2
        exit 1
    fi
    version="$(sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]]\{1,\}CUB_VERSION[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p' "$version_h" | head -1)"
    if [ -n "$version" ]; then
        expect=("-DCUB_SHIM_EXPECT_VERSION=$version")
        echo "CCCL checkout $root: CUB_VERSION $version"
    fi
fi

"$nvcc" --version
mkdir -p "$(dirname "$out")"
# The ${a[@]+...} forms: empty arrays under set -u on bash < 4.4.
# shellcheck disable=SC2086 # CUB_NVCC_FLAGS is a list of flags
"$nvcc" -O3 -std=c++17 -arch="$arch" -Xcompiler -fPIC -shared \
    ${expect[@]+"${expect[@]}"} ${includes[@]+"${includes[@]}"} ${CUB_NVCC_FLAGS:-} \
    -o "$out" "$here/cub_shim.cu"
echo "built $out (arch $arch${cccl:+, CCCL $cccl})"
