#!/usr/bin/env bash
# Installs the pinned reference MCP filesystem server (package-lock.json)
# into node_modules for integration/mcp_test.go, which runs it over stdio
# beside sandfs's /mcp. CI runs this before `go test`; the tests never
# download anything.
set -euo pipefail
cd "$(dirname "$0")" && npm ci --no-audit --no-fund
