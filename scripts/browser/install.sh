#!/usr/bin/env bash
# Installs the browser the console's browser suite drives: Debian's `chromium` (playwright-core launches it with
# executablePath; no Playwright browser download). Idempotent: skips when /usr/bin/chromium (or $RAG_CHROMIUM) exists.
set -euo pipefail
bin="${RAG_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$bin" ]; then
  echo "browser: $bin present"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser: $bin is missing and apt-get is not available; install Chromium and set RAG_CHROMIUM to its path" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
echo "browser: $("$bin" --version 2>/dev/null || echo "$bin installed")"
