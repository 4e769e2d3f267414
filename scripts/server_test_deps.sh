#!/usr/bin/env bash
# Installs the npm packages of the `llm serve` Node.js tests (test/llm/server/package.json: the
# official openai client and puppeteer-core) into the build tree:
#   scripts/server_test_deps.sh BUILD_DIR
# Copies package.json and package-lock.json into BUILD_DIR/server_test and runs `npm ci` there.
# Skipped when node_modules was installed from the same lock file (a copy of the lock file that was
# installed is kept next to node_modules and compared). The tests run with BUILD_DIR/server_test as
# their working directory, so their imports resolve from its node_modules.
set -euo pipefail

build_dir="${1:?usage: $0 BUILD_DIR}"
src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pkg_dir="$src_dir/test/llm/server"
dest="$(mkdir -p "$build_dir/server_test" && cd "$build_dir/server_test" && pwd)"
installed_lock="$dest/node_modules/.installed-package-lock.json"

command -v node >/dev/null || { echo "server_test_deps: node not found (scripts/setup.sh installs nodejs)" >&2; exit 1; }
command -v npm >/dev/null || { echo "server_test_deps: npm not found (scripts/setup.sh installs npm)" >&2; exit 1; }
for f in package.json package-lock.json; do
  [[ -f "$pkg_dir/$f" ]] || { echo "server_test_deps: $pkg_dir/$f is missing" >&2; exit 1; }
done

if [[ -f "$installed_lock" ]] && cmp -s "$installed_lock" "$pkg_dir/package-lock.json" &&
   cmp -s "$dest/package.json" "$pkg_dir/package.json"; then
  echo "server_test_deps: up to date in $dest"
  exit 0
fi

cp "$pkg_dir/package.json" "$pkg_dir/package-lock.json" "$dest/"
echo "server_test_deps: npm ci in $dest"
if ! (cd "$dest" && npm ci --no-audit --no-fund >&2); then
  echo "server_test_deps: npm ci failed in $dest (is the npm registry reachable?)" >&2
  exit 1
fi
cp "$pkg_dir/package-lock.json" "$installed_lock"
echo "server_test_deps: installed $(node -p "Object.entries(require('$dest/package.json').dependencies).map(([n, v]) => n + '@' + v).join(', ')") in $dest"
