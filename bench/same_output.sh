#!/usr/bin/env bash
# Checks that a change leaves gapscope's results exactly as they were:
# `analyze --format json` (and a few option variants that take the
# importer's other paths) of a reference build and of this checkout must be
# byte-identical on every shared trace, every fixture trace and any extra
# file given (the big benchmark traces, plain and gzip).
#
#   bench/same_output.sh REV [EXTRA_TRACE...]      e.g. bench/same_output.sh main big.json
#
# REV is built in a temporary git worktree (target dir
# ~/.cache/gapscope-ref-target, kept between runs, so a second check of the
# same REV is quick); this checkout is built as bench/run.sh builds it.
# GAPSCOPE_REF_BIN=path skips building REV and uses that binary instead.
# Prints one line per trace and variant that differs, and exits 1 if any does.
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:?usage: bench/same_output.sh REV [EXTRA_TRACE...]}
shift
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ -n "${GAPSCOPE_REF_BIN:-}" ]; then
    cp "$GAPSCOPE_REF_BIN" "$WORK/ref"
else
    git worktree add --quiet --detach "$WORK/tree" "$REV"
    (cd "$WORK/tree" && CARGO_TARGET_DIR=$HOME/.cache/gapscope-ref-target \
        cargo build --release --quiet --bin gapscope)
    cp "$HOME/.cache/gapscope-ref-target/release/gapscope" "$WORK/ref"
    git worktree remove --force "$WORK/tree"
fi
export CARGO_TARGET_DIR=${BENCH_TARGET_DIR:-$HOME/.cache/gapscope-bench-target}
cargo build --release --quiet --bin gapscope
cp "$CARGO_TARGET_DIR/release/gapscope" "$WORK/new"
# Cargo hashes a workspace's own crates by their path inside the workspace,
# so two checkouts that share a target dir share those crates, and a source
# file older than another checkout's build counts as built. Comparing REV
# with its own binary would then pass whatever changed: refuse that.
if cmp -s "$WORK/ref" "$WORK/new" && ! git diff --quiet "$REV" -- '*.rs' '*Cargo.toml' Cargo.lock; then
    echo "same_output: the sources differ from $REV but the build is byte-identical to $REV's:" \
        "cargo reused another checkout's build from a shared target dir;" \
        "touch the changed sources (or set BENCH_TARGET_DIR) and run again" >&2
    exit 2
fi

traces=()
while IFS= read -r f; do traces+=("$f"); done < <(
    find ../shared/traces fixtures -type f \( -name '*.json' -o -name '*.json.gz' \) | sort
)
traces+=("$@")

# Variants: the defaults; HTA's step rule; a time window with a start (two
# passes over the file) and one without (rows dropped as they are read);
# an event limit (one thread, in order).
variants=(
    ""
    "--exclude-last-step"
    "--time-window 1ms.."
    "--time-window ..50ms"
    "--max-events 5000"
)
checked=0
differ=0
for f in "${traces[@]}"; do
    for v in "${variants[@]}"; do
        # shellcheck disable=SC2086 # the variant's words are separate arguments
        "$WORK/ref" analyze --format json --quiet $v "$f" > "$WORK/a" 2> "$WORK/ea" && ra=0 || ra=$?
        # shellcheck disable=SC2086
        "$WORK/new" analyze --format json --quiet $v "$f" > "$WORK/b" 2> "$WORK/eb" && rb=0 || rb=$?
        checked=$((checked + 1))
        if [ "$ra" != "$rb" ] || ! cmp -s "$WORK/a" "$WORK/b" || ! cmp -s "$WORK/ea" "$WORK/eb"; then
            differ=$((differ + 1))
            echo "DIFFERS: $f ${v:-(defaults)} (exit $ra vs $rb)"
        fi
    done
done
echo "$checked runs of $((${#traces[@]})) traces x ${#variants[@]} variants: $differ differ"
[ "$differ" = 0 ]
