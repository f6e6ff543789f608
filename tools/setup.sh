#!/usr/bin/env bash
# Installs what thunder-gen needs that this machine lacks (Debian packages; the CUDA Toolkit is
# expected preinstalled, with nvcc on PATH or under /usr/local/cuda). Run as root.
set -euo pipefail
packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev catch2 libtorch-dev
          libboost-graph-dev libboost-context-dev libmimalloc-dev libsimdjson-dev libdtl-dev libzip-dev coinor-libcbc-dev pkgconf python3 python3-venv strace
          clang-16 libclang-rt-16-dev   # the fuzz build (tools/fuzz.sh): clang and libFuzzer with its sanitizers
          llvm-16-tools)                # FileCheck and split-file, for the per-pass tests (tests/passes/)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc is at /usr/local/cuda/bin (add it to PATH)"
fi
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "setup: the CUDA Toolkit (nvcc) is missing" >&2; exit 1; }
echo "setup: all dependencies present"
