#!/usr/bin/env bash
# What the test suite needs beyond `pnpm install`, installed only when missing:
#   - Debian's chromium, driven by playwright-core for the consent-page tests (playwright never downloads
#     a browser here);
#   - Debian's PostgreSQL server (the `postgresql` package: initdb, pg_ctl), which test-support/postgres.ts
#     starts in a temporary folder for the PostgreSQL adapters' tests;
#   - a side Node 24 in .tmp/node24 for the MCP 2026-07-28 conformance runner. It is never on the
#     workspace's PATH: scripts must keep running on Node 20 (see STACK notes in docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium for the browser tests…" >&2
  sudo_prefix=""
  if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then sudo_prefix="sudo"; else
      echo "chromium is missing and this user cannot install it: run 'apt-get install -y chromium' as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo_prefix apt-get update -qq >/dev/null
  $sudo_prefix apt-get install -y -qq chromium >/dev/null
fi

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "installing Debian's postgresql for the PostgreSQL adapter tests…" >&2
  sudo_prefix=""
  if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then sudo_prefix="sudo"; else
      echo "postgresql is missing and this user cannot install it: run 'apt-get install -y postgresql' as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo_prefix apt-get update -qq >/dev/null
  $sudo_prefix apt-get install -y -qq postgresql >/dev/null
fi

if [ ! -x .tmp/node24/node_modules/.bin/node ]; then
  echo "installing a side Node 24 in .tmp/node24 for the 2026-07-28 conformance runner…" >&2
  mkdir -p .tmp/node24
  npm install --prefix .tmp/node24 --no-save --no-audit --no-fund node@24 >/dev/null 2>&1
fi
