#!/usr/bin/env bash
# Installs every Debian package Sluice builds, tests and runs with. Idempotent:
# packages already present are skipped, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates
  postgresql postgresql-contrib libpq-dev libpqxx-dev
  librdkafka-dev libsodium-dev nlohmann-json3-dev libsimdjson-dev
  libspdlog-dev libfmt-dev libcli11-dev libcpp-httplib-dev libssl-dev
  libcurl4-openssl-dev libgtest-dev libgmock-dev libbenchmark-dev libjemalloc-dev
  kcat python3 python3-confluent-kafka python3-kafka python3-avro python3-requests
  clang-format clang libclang-rt-14-dev util-linux procps ccache ninja-build
  mariadb-server mariadb-client libmariadb-dev
  chromium
)

# The web UI builds with Node.js 20+ and npm (a nodesource nodejs already
# carries npm; Debian's own pair is the fallback when there is no node).
command -v node >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's postgresql package starts a system cluster on 5432; Sluice runs its
# own clusters, so the system one is left alone and never relied on. The same
# holds for mariadb-server: the mysql-source tests start their own mariadbd.

# The manifest validator's schemas (tests/deploy: kubernetes-models).
if command -v npm >/dev/null && [ ! -d "$(dirname "$0")/../tests/deploy/node_modules/kubernetes-models" ]; then
  (cd "$(dirname "$0")/../tests/deploy" && npm ci --no-audit --no-fund >/dev/null)
fi

echo "setup: dependencies ready"
