#!/usr/bin/env bash
# Format and lint checks (.clang-format, .clang-tidy), the last step of .ci/run.
#
#   scripts/lint.sh check [BUILD_DIR]   clang-format over every tracked C/C++ file, then
#                                       clang-tidy over src/ and tools/; non-zero on any finding
#   scripts/lint.sh fix                 clang-format -i over every tracked C/C++ file (clang-tidy
#                                       findings are fixed by hand: each names its check)
#
# BUILD_DIR (default $FENCELOCK_LINT_BUILD, else build/) gives clang-tidy its compile commands:
# the directory is configured with CMAKE_EXPORT_COMPILE_COMMANDS=ON, nothing is compiled, so a
# fresh checkout needs no build first. Tests, examples and bench are formatted but not linted
# (clang-tidy costs about 5 s a file; src/ and tools/ are the shipped code).
#
# Versions: clang-format 14 (Debian 12's clang-format; another version formats differently) and
# clang-tidy 16 (clang-tidy-16): clang 14 cannot parse libstdc++'s <expected>. libstdc++ 12
# offers std::expected only when __cpp_concepts >= 202002L; clang 16 implements what that needs
# (conditionally trivial special members, P0848) but still reports 201907L, hence the override.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
clang_format="${FENCELOCK_CLANG_FORMAT:-clang-format}"
clang_tidy="${FENCELOCK_CLANG_TIDY:-clang-tidy-16}"
jobs="${FENCELOCK_LINT_JOBS:-2}"

usage() {
  echo "usage: scripts/lint.sh check [BUILD_DIR] | scripts/lint.sh fix" >&2
  exit 2
}

# Tracked C and C++ sources, NUL-separated (generated files live in build directories).
sources() { git ls-files -z -- '*.cpp' '*.hpp' '*.c' '*.h'; }

# Prints one line for each file clang-format would change (or clang-format's own error).
format_report() {
  local f out n
  for f; do
    out=$("${FENCELOCK_CLANG_FORMAT:-clang-format}" --dry-run --Werror "$f" 2>&1) && continue
    n=$(grep -c 'code should be clang-formatted' <<<"$out" || true)
    if [ "$n" -gt 0 ]; then echo "  $f: $n places differ"; else printf '%s\n' "$out"; fi
  done
  return 0
}

mode="${1:-}"
[ $# -gt 0 ] && shift
case "$mode" in
  fix)
    [ $# -eq 0 ] || usage
    "$root/scripts/install-deps.sh" lint
    sources | xargs -0 -P "$jobs" -n 20 "$clang_format" -i
    echo "lint: formatted; review with git diff" >&2
    ;;
  check)
    [ $# -le 1 ] || usage
    build="${1:-${FENCELOCK_LINT_BUILD:-$root/build}}"
    "$root/scripts/install-deps.sh" lint
    failed=0

    report="$(mktemp)"
    commands="$(mktemp -d)"
    trap 'rm -rf "$report" "$commands"' EXIT
    # One line per file that differs (clang-format's own report shows every place, thousands).
    sources | xargs -0 -P "$jobs" -n 20 bash -c "$(declare -f format_report); format_report \"\$@\"" _ >"$report"
    if [ -s "$report" ]; then
      sort "$report" >&2
      echo "lint: the files above are not formatted as .clang-format says (clang-format --dry-run" \
           "FILE shows where); run scripts/lint.sh fix" >&2
      failed=1
    fi

    # Configure only (keeps the directory's other settings): clang-tidy needs the commands.
    cmake -S "$root" -B "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
    mapfile -t units < <(sed -n 's|^ *"file": "\(.*\)",\{0,1\}$|\1|p' "$build/compile_commands.json" |
                         grep -E "^$root/(src|tools)/.*\.cpp$" | sort -u)
    [ ${#units[@]} -gt 0 ] || { echo "lint: no src/ or tools/ files in $build/compile_commands.json" >&2; exit 1; }
    # The build's precompiled headers are GCC's: clang cannot read them, so clang-tidy gets the
    # commands without the forced include (every file includes what it uses on its own).
    sed -E 's# -include [^ ]*/cmake_pch\.hxx##g' "$build/compile_commands.json" >"$commands/compile_commands.json"
    t=$SECONDS
    status=0
    # Findings in a header show up once per file including it: sort -u keeps one.
    printf '%s\0' "${units[@]}" |
      xargs -0 -P "$jobs" -n 1 "$clang_tidy" -p "$commands" --quiet --warnings-as-errors='*' \
        --header-filter="^$root/(src|include|tools)/" \
        --extra-arg=-std=c++2b --extra-arg=-U__cpp_concepts --extra-arg=-D__cpp_concepts=202002L \
        >"$report" 2>&1 || status=$?
    if grep -qE ': (warning|error):' "$report"; then
      grep -E ': (warning|error):' "$report" | sort -u >&2
      echo "lint: clang-tidy findings above (.clang-tidy names the checks and why); fix the code, or" \
           "for a deliberate exception add // NOLINT(check-name) with the reason" >&2
      failed=1
    elif [ "$status" -ne 0 ]; then
      cat "$report" >&2
      echo "lint: $clang_tidy failed (exit $status) without a finding; output above" >&2
      failed=1
    fi
    echo "lint: clang-tidy over ${#units[@]} files took $((SECONDS - t)) s" >&2
    [ $failed -eq 0 ] && echo "lint: clean" >&2
    exit $failed
    ;;
  *) usage ;;
esac
