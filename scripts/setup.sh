#!/usr/bin/env bash
# Installs the Debian packages ugrad needs to build, test and benchmark. Idempotent: installs only
# what is missing. Runs apt-get as root, through sudo otherwise.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang-14 libclang-rt-14-dev clang-format ccache
  llvm-19-dev lld-19 liblld-19-dev libfmt-dev doctest-dev libpcre2-dev libutf8proc-dev
  nlohmann-json3-dev libopenblas-dev libamdhip64-5 libcurl4-openssl-dev libssl-dev
  libcpp-httplib-dev pkg-config
  curl chromium  # the server's tests: curl as a client, the chat page in a headless browser
  fortunes  # the demo model's training text (BSD-licensed fortune cookie databases)
)
# Node.js runs the reference tokenizer in the tests; keep one that came from elsewhere.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ugrad setup: this is not a Debian/Ubuntu system. Install these (or your distribution's" >&2
  echo "equivalents) by hand: ${missing[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then sudo=""
elif command -v sudo >/dev/null 2>&1; then sudo="sudo"
else
  echo "ugrad setup: missing packages: ${missing[*]}" >&2
  echo "Run as root, or install sudo, or run: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "ugrad setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
