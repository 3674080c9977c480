#!/usr/bin/env bash
# Installs every Debian package OTC's build, tests, demo and benchmarks need,
# and the PyPI packages of tools/requirements-torch2.txt into a virtual
# environment BUILD/pyenv (BUILD: the first argument, default build).
# Idempotent: packages already present are skipped; nothing runs when all are.
set -euo pipefail

build_dir=${1:-build}

packages=(
  # build
  cmake ninja-build g++ ccache pkg-config
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin libdnnl-dev libopenblas-openmp-dev zlib1g-dev nlohmann-json3-dev
  libgtest-dev pybind11-dev
  # tests, demo, benchmarks
  python3-torch python3-torchvision python3-onnx python3-numpy
  dataset-fashion-mnist libonnx-testdata iproute2 python3-venv
  python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

install_pyenv() {
  # Recreated when the requirements change (their hash is kept beside).
  local req env="$build_dir/pyenv"
  req="$(dirname "$0")/requirements-torch2.txt"
  local want
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ -x "$env/bin/python" ] && [ "$(cat "$env/.requirements" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "install-deps: installing $req into $env"
  rm -rf "$env"
  mkdir -p "$build_dir"
  /usr/bin/python3 -m venv "$env"
  "$env/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
  echo "$want" > "$env/.requirements"
}

if [ ${#missing[@]} -eq 0 ]; then
  install_pyenv
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "install-deps: these packages are missing and installing them needs root:" >&2
    echo "  apt-get install ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_pyenv
