#!/usr/bin/env bash
# Installs the Debian 12 packages that collie's build and tests need.
# Idempotent: skips apt-get entirely when everything is already installed.
set -euo pipefail
packages=(build-essential cmake ninja-build libgtest-dev libgmock-dev procps
          python3 python3-numpy python3-pytest python3-mpi4py pybind11-dev libdlpack-dev
          libopenmpi-dev openmpi-bin gnuplot-nox clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
