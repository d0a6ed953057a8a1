#!/usr/bin/env bash
# Installs the pinned sandbox-agent SDK (package-lock.json) into node_modules
# for integration/sdk_test.go. CI runs this before `go test`; the tests never
# download anything. --omit=optional skips @sandbox-agent/cli, the SDK's
# optional ~25 MB native sandbox-agent server binary, which the check does
# not use.
set -euo pipefail
cd "$(dirname "$0")" && npm ci --no-audit --no-fund --omit=optional
