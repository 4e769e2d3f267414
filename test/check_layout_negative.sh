#!/usr/bin/env bash
# scripts/check_layout.sh must fail on a tree that breaks its rule: a lower folder including a
# higher one, and a listed folder that does not exist.
set -u
script=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/base" "$tree/uop"
cat > "$tree/docs/design.md" <<'MD'
```layers
base:
uop: base
MD
echo '```' >> "$tree/docs/design.md"
echo '#include "base/error.h"' > "$tree/uop/ok.cpp"
echo '#include "uop/uop.h"' > "$tree/base/bad.h"
out=$(bash "$script" "$tree") && { echo "check_layout passed a tree where base/ includes uop/"; exit 1; }
grep -q 'base/bad.h:1 includes uop' <<<"$out" || { echo "unexpected report: $out"; exit 1; }
rm "$tree/base/bad.h"
bash "$script" "$tree" >/dev/null || { echo "check_layout failed a clean tree"; exit 1; }
sed -i 's/^uop: base$/uop: base\ntensor: uop/' "$tree/docs/design.md"
out=$(bash "$script" "$tree") && { echo "check_layout passed a missing folder"; exit 1; }
echo "check_layout_negative: OK"
