#!/usr/bin/env bash
# Checks the Spin model of the lease protocol (model/, see model/README.md): each configuration
# of the correct model must be searched completely with no error, and each seeded bug (and
# the broken clock assumption) must be found, breaking the property it is meant to break. One
# the search does not find fails the check: a checker that cannot fail proves nothing. Works in a temporary folder
# (nothing is written into the tree); --keep leaves it, with the trails, and prints its path.
# Installs spin (a Debian package) if it is missing, through scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
model="$PWD/model/lease.pml"
keep=0
[ "${1:-}" = "--keep" ] && keep=1

scripts/install-deps.sh --packages spin gcc

work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-model.XXXXXX")
if [ $keep -eq 1 ]; then echo "check-model: runs kept in $work" >&2; else trap 'rm -rf "$work"' EXIT; fi

# What a violation breaks, from pan's message (model/lease.pml names the properties).
property_of() {
  case "$1" in
    *"now<su[0]"*) echo P1 ;;                       # ltl p1: two believe they hold
    *"new_fence>max_fence_issued"*) echo P2-fence ;; # a fence not above every earlier one
    *"hg[t]>store_grant"*) echo P2-store ;;          # the store accepted an older lease's write
    *"p3_overdue"*) echo P3 ;;                       # a handed lease blocked past its bound
    *) echo "?" ;;
  esac
}

# run NAME EXPECT [spin -D flags...]: EXPECT is "none" for the correct model, else the
# property the seeded bug must break. Writes its report line to NAME/line, and NAME/ok.
run() {
  local name=$1 expect=$2; shift 2
  local dir="$work/$name" start out states errors violation got verdict
  mkdir -p "$dir"
  start=$(date +%s%N)
  if ! (cd "$dir" && spin "$@" -a "$model" >spin.out 2>&1 &&
         gcc -O2 -DSAFETY -DCOLLAPSE -DMEMLIM=3072 -o pan pan.c 2>gcc.out); then
    echo "model: $name: spin or gcc failed (see $dir)" >"$dir/line"; return 0
  fi
  (
    cd "$dir"
    ./pan -m100000 -w24 >pan.out 2>&1 || true   # pan's status does not tell; its output does
    if [ -f lease.pml.trail ]; then
      spin "$@" -k lease.pml.trail -t "$model" 2>&1 | grep -E '^ *t=[0-9]+ ' | grep -v ' tick$' \
        | sed 's/^ *//' >trail.txt || true
    fi
  )
  out="$dir/pan.out"
  states=$(awk '/states, stored/ {print $1; exit}' "$out")
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -1)
  violation=$(grep -m1 -E 'assertion violated|claim violated' "$out" || true)
  got=none
  [ -n "$violation" ] && got=$(property_of "$violation")
  verdict=ok
  if [ "$expect" = none ]; then
    # Correct model: no error, and the whole bounded space searched.
    if [ "${errors:-x}" != 0 ] || grep -qE 'max search depth too small|MEMLIM|out of memory|Search not completed' "$out"; then
      verdict=FAILED
    fi
  elif [ "${errors:-0}" = 0 ] || [ "$got" != "$expect" ] || [ ! -s "$dir/trail.txt" ]; then
    verdict="FAILED: not found as $expect"
  fi
  # Finding 1's own story needs the master to come back: the trail must hold two failovers.
  if [ "$name" = bug-oldest-age-cut-off ] && [ "$(grep -c promoted "$dir/trail.txt" 2>/dev/null)" != 2 ]; then
    verdict="FAILED: trail without A -> B -> A"
  fi
  printf 'model: %-24s expects %-8s got %-8s %9s states  %5.1f s  %s\n' "$name" "$expect" "$got" \
    "${states:-?}" "$(( ($(date +%s%N) - start) / 1000000 ))e-3" "$verdict" >"$dir/line"
  if [ "$verdict" = ok ]; then touch "$dir/ok"; fi
}

runs=(
  # The correct model, in four bounded configurations (model/config.pml).
  "failover                none"
  "failover-line           none     -DMAXFO=1 -DACQS0=2 -DH=3"
  "failover-skew           none     -DMAXFO=1 -DD=2 -DSKEW=1"
  "line                    none     -DLINE"
  # Seeded bugs, each in a configuration where its rule is at work.
  "bug-oldest-age          P1       -DBUG_OLDEST_SENTINEL_AGE"
  "bug-oldest-age-cut-off  P1       -DBUG_OLDEST_SENTINEL_AGE -DSENTINEL_CLOCKS_STAY"
  "bug-unbounded-own-grant P3       -DLINE -DBUG_UNBOUNDED_OWN_GRANT"
  "bug-vouch-any           P3       -DLINE -DBUG_VOUCH_ANY"
  "bug-no-clock-term       P2-fence -DBUG_NO_CLOCK_TERM"
  "bug-no-clock-term-store P2-store -DBUG_NO_CLOCK_TERM -DSTORE_CHECK_ONLY -DMAXFO=1 -DACQS0=2 -DH=4"
  "bug-no-grace            P1       -DBUG_NO_GRACE"
  "bug-trust-stale-grant   P1       -DLINE -DBUG_TRUST_STALE_GRANT"
  "bug-no-drift-margin     P1       -DLINE -DBUG_NO_DRIFT_MARGIN"
  # Not a bug: DESIGN.md's assumption broken, clocks a whole failover apart.
  "skew-of-a-failover      P2-fence -DMAXFO=1 -DD=1 -DSKEW=1 -DACQS0=2 -DH=4"
)
# One run per core, at most 4 (the largest takes about 1.3 GB).
parallel=$(nproc); [ "$parallel" -gt 4 ] && parallel=4
started=$SECONDS
for r in "${runs[@]}"; do
  # shellcheck disable=SC2086  # the flags are words
  run $r &
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
done
wait
failed=0
for r in "${runs[@]}"; do
  name=${r%% *}
  cat "$work/$name/line" 2>/dev/null || echo "model: $name: no result"
  [ -f "$work/$name/ok" ] || failed=1
done
if [ $failed -ne 0 ]; then
  echo "check-model: FAILED (runs kept in $work)" >&2
  trap - EXIT
  exit 1
fi
echo "check-model: the correct model holds P1-P3 in every configuration and every seeded bug" \
  "was found ($(( SECONDS - started )) s)" >&2
