#!/usr/bin/env bash
# Installs the pinned playwright-core (package-lock.json) into node_modules
# for integration/ui_test.go. CI runs this before `go test`; the tests never
# download anything. playwright-core carries no browser: the test drives
# Debian's /usr/bin/chromium (apt package chromium).
set -euo pipefail
cd "$(dirname "$0")" && npm ci --no-audit --no-fund
