# Sourced by the bench scripts: expanded_script FILE prints a script as Redis receives it, each
# `-- @include NAME` line replaced by lib/NAME.lua next to it, as cmake/EmbedScripts.cmake does
# at build time (EVAL of the raw file would fail).
expanded_script() {
  local file="$1" line
  while IFS= read -r line || [ -n "$line" ]; do
    if [[ "$line" =~ ^--\ @include\ ([a-z_]+)$ ]]; then cat "$(dirname "$file")/lib/${BASH_REMATCH[1]}.lua"
    else printf '%s\n' "$line"; fi
  done <"$file"
}
