#!/usr/bin/env bash
# Checks the C++ sources against clang-format (LLVM style, .clang-format).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cf="${CLANG_FORMAT:-}"
if [ -z "$cf" ]; then
  for c in /usr/lib/llvm-22/bin/clang-format clang-format-22 clang-format; do
    if command -v "$c" >/dev/null; then cf="$c"; break; fi
  done
fi
if [ -z "$cf" ]; then
  echo "check-format: clang-format not found, skipping" >&2
  exit 0
fi
cd "$root"
git ls-files 'passes/*.cpp' 'passes/*.h' 'bindings/*.cpp' 'bindings/*.h' |
  xargs "$cf" --dry-run -Werror
echo "check-format: clean"
