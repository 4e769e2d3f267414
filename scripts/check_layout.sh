#!/usr/bin/env bash
# Checks the folder layering rule of docs/design.md against the code's #include lines.
#
#   bash scripts/check_layout.sh [ROOT]      (ROOT: the repository root, default .)
#
# Reads the one ```layers block of docs/design.md: one line per folder, `folder: allowed...`
# (`*` = any listed folder; a folder may always include itself). Then:
#   - every listed folder must exist;
#   - every .h/.cpp file belongs to the longest listed folder that prefixes its path (a subfolder
#     that is not listed counts as its listed parent); files under no listed folder are skipped;
#   - every `#include "P"` whose path P starts with a listed folder (longest match again) must
#     name the file's own folder or one of its allowed folders.
# Prints one line per problem and exits 1, or prints a summary and exits 0.
set -u
root=${1:-.}
design="$root/docs/design.md"
if [[ ! -f $design ]]; then
  echo "layout: $design not found"
  exit 1
fi
cd "$root" || exit 1

blocks=$(grep -c '^```layers[[:space:]]*$' docs/design.md)
if [[ $blocks -ne 1 ]]; then
  echo "layout: docs/design.md must hold exactly one \`\`\`layers block (found $blocks)"
  exit 1
fi

# The rules, as "folder<TAB>allowed allowed ..." lines.
rules=$(awk '
  /^```layers[[:space:]]*$/ { inside = 1; next }
  inside && /^```/          { exit }
  inside {
    sub(/\r$/, ""); sub(/#.*/, "")
    if ($0 ~ /^[[:space:]]*$/) next
    i = index($0, ":")
    if (i == 0) { print "BAD\t" $0; next }
    f = substr($0, 1, i - 1); a = substr($0, i + 1)
    gsub(/^[[:space:]]+|[[:space:]]+$/, "", f); sub(/\/+$/, "", f)
    gsub(/^[[:space:]]+|[[:space:]]+$/, "", a); gsub(/[[:space:]]+/, " ", a)
    print f "\t" a
  }' docs/design.md)

status=0
folders=()
while IFS=$'\t' read -r folder allowed; do
  [[ -z $folder ]] && continue
  if [[ $folder == BAD ]]; then
    echo "layout: docs/design.md: layers line without 'folder:': $allowed"
    status=1
    continue
  fi
  folders+=("$folder")
  if [[ ! -d $folder ]]; then
    echo "layout: folder '$folder' is listed in docs/design.md but does not exist"
    status=1
  fi
done <<<"$rules"

if [[ ${#folders[@]} -eq 0 ]]; then
  echo "layout: the layers block of docs/design.md lists no folders"
  exit 1
fi

# Every include line of every .h/.cpp file under an existing listed folder.
existing=()
for f in "${folders[@]}"; do [[ -d $f ]] && existing+=("$f"); done
includes=$(
  if [[ ${#existing[@]} -gt 0 ]]; then
    find "${existing[@]}" -type f \( -name '*.h' -o -name '*.cpp' \) -print0 | sort -zu |
      xargs -0 -r grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' --
  fi
)

result=$(awk -v rules="$rules" '
  # Longest listed folder that is p itself or a prefix of p followed by "/".
  function owner(p,    best, f) {
    best = ""
    for (f in allowed)
      if ((p == f || substr(p, 1, length(f) + 1) == f "/") && length(f) > length(best)) best = f
    return best
  }
  BEGIN {
    n = split(rules, lines, "\n")
    for (i = 1; i <= n; ++i) {
      if (lines[i] == "" || lines[i] ~ /^BAD\t/) continue
      split(lines[i], kv, "\t")
      allowed[kv[1]] = kv[2]
    }
    checked = 0; bad = 0
  }
  {
    # path:line:text (paths are repository-relative and contain no ":")
    c1 = index($0, ":"); file = substr($0, 1, c1 - 1); rest = substr($0, c1 + 1)
    c2 = index(rest, ":"); line = substr(rest, 1, c2 - 1); text = substr(rest, c2 + 1)
    sub(/^\.\//, "", file)
    if (!match(text, /"[^"]*"/)) next
    inc = substr(text, RSTART + 1, RLENGTH - 2)
    from = owner(file); to = owner(inc)
    if (from == "" || to == "") next
    ++checked
    if (to == from) next
    ok = 0
    m = split(allowed[from], list, " ")
    for (j = 1; j <= m; ++j) if (list[j] == "*" || list[j] == to) ok = 1
    if (!ok) {
      ++bad
      only = allowed[from] == "" ? "itself" : allowed[from]
      printf "%s:%s includes %s (folder %s may include only %s)\n", file, line, inc, from, only
    }
  }
  END { printf "CHECKED %d %d\n", checked, bad }' <<<"$includes")

checked=$(sed -n 's/^CHECKED \([0-9]*\) .*/\1/p' <<<"$result")
nbad=$(sed -n 's/^CHECKED [0-9]* \([0-9]*\)$/\1/p' <<<"$result")
grep -v '^CHECKED ' <<<"$result" | grep -v '^$'
[[ ${nbad:-0} -gt 0 ]] && status=1

if [[ $status -ne 0 ]]; then
  echo "layout: ${#folders[@]} folders, ${checked:-0} includes checked, ${nbad:-0} violations, FAILED"
  exit 1
fi
echo "layout: ${#folders[@]} folders, ${checked:-0} includes checked, OK"
exit 0
