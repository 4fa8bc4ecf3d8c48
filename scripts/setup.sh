#!/usr/bin/env bash
# Installs what disagmoe needs on Debian 12 (apt only) and builds it with CMake + Ninja + ccache.
#   scripts/setup.sh [build-dir]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config clang-format-19
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libz3-dev libyaml-cpp-dev libcli11-dev libonnx-dev libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libopenblas-dev openmpi-bin libopenmpi-dev libgtest-dev
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
  python3-torch python3-onnx python3-numpy python3-matplotlib
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm for the onnxruntime oracle: Debian's packages where the machine has none (an
# existing Node.js installation, which bundles npm, is kept).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# onnxruntime-node (npm) is the forward oracle of the tests; without npm the oracle test skips.
# npm 11 runs no install scripts, so only the package's bundled CPU binaries are used (the
# variable also tells older versions not to download the CUDA provider).
if command -v npm >/dev/null 2>&1 && [ ! -d tests/oracle/node_modules/onnxruntime-node ]; then
  (cd tests/oracle && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error) ||
    echo "setup: npm could not install onnxruntime-node; the onnxruntime oracle test will be skipped"
fi

# Two cores: ccache keeps rebuilds short; Ninja's default of cores+2 jobs would swap on MLIR TUs.
cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD_DIR" -j "$(nproc)"
