#!/usr/bin/env bash
# Installs every Debian 12 package that building, running and testing Drover need.
# Idempotent: packages already present are skipped, and apt is not touched at all
# when nothing is missing. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libboost-url1.81-dev
  liblmdb-dev libzstd-dev nlohmann-json3-dev libabsl-dev libxxhash-dev libre2-dev
  libspdlog-dev libfmt-dev libcli11-dev libseccomp-dev nettle-dev libjemalloc-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang-format clang-tidy clang libclang-rt-14-dev lld
  curl procps util-linux tzdata iproute2
  etcd-server
  docker.io docker-registry busybox-static apache2-utils
  python3 python3-prometheus-client
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
