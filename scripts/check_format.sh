#!/usr/bin/env bash
# Checks that every C++/CUDA source the repository tracks is formatted by .clang-format (LLVM
# style, 100 columns) with clang-format 19 (Debian's clang-format-19, installed by scripts/setup.sh);
# lists the files that are not and exits 1. Format them with:
#   git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format-19 -i
# Also checks that every such file begins with a one-line header comment (its first line starts
# with `//`, saying what the file is for; issue 13); lists the files that do not and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-19}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "check_format: $CLANG_FORMAT not found (scripts/setup.sh installs clang-format-19)" >&2
  exit 1
fi
bad=()
while IFS= read -r f; do
  "$CLANG_FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} file(s) not formatted by .clang-format: ${bad[*]}" >&2
  exit 1
fi
noheader=()
while IFS= read -r f; do
  IFS= read -r first <"$f" || true
  [[ "$first" == //* ]] || noheader+=("$f")
done < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ ${#noheader[@]} -gt 0 ]; then
  echo "check_format: ${#noheader[@]} file(s) without a // header line: ${noheader[*]}" >&2
  exit 1
fi
echo "check_format: $(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | wc -l) files formatted"
