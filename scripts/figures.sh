#!/usr/bin/env bash
# Regenerates every figure of docs/RESULTS.md's `paraes bench` section and of docs/SUNWAY.md
# from fresh runs, with fixed options:
#
#   scripts/figures.sh            # all of it (several minutes on a 2-vCPU machine)
#   scripts/figures.sh --no-sunway
#   scripts/figures.sh --tables-only   # measure nothing: redo the RESULTS.md tables from
#                                      # docs/bench/*.json (after changing the generator)
#
# 1. `paraes bench` runs, each writing a JSON document (what measured: paraes version and
#    commit, date, command, machine, load averages; the rows) and a CSV under docs/bench/:
#      sweep  every CPU AES implementation of this CPU (1 thread and all cores), the Sunway
#             simulator and openssl, AES-128-CTR, 16 B..256 MiB  -> docs/bench-throughput.svg
#      pyaes  the pyaes seed's workload: 23,000-byte CTR calls, 21 samples
#      e2e    the whole enc pipeline (--e2e) on temporary files in $TMPDIR (default /tmp)
# 2. `paraes bench --from-json docs/bench/NAME.json` prints each run's markdown summary, which
#    replaces the text between `<!-- figures.sh: NAME -->` and `<!-- /figures.sh: NAME -->` in
#    docs/RESULTS.md.
# 3. The Sunway figures: the `reproduce` example of paraes-sunway-sim writes
#    docs/sunway-fig{6,7,8}.svg; its tables go to docs/sunway-reproduce.md.
#
# The machine's load is recorded in each document (load_before/load_after); the uptime line
# at the start is printed too. Commit the results.
set -euo pipefail
cd "$(dirname "$0")/.."

sunway=1
measure=1
for arg in "$@"; do
    case "$arg" in
    --no-sunway) sunway=0 ;;
    --tables-only) measure=0 sunway=0 ;;
    *) echo "usage: scripts/figures.sh [--no-sunway | --tables-only]" >&2; exit 2 ;;
    esac
done

cargo build --release --bin paraes
paraes=target/release/paraes
out=docs/bench
mkdir -p "$out"
echo "figures.sh: $(uptime)"

bench() { # NAME ARGS...: one run, its JSON and CSV under docs/bench/
    local name=$1
    shift
    echo "figures.sh: paraes bench $* ($name)" >&2
    "$paraes" bench "$@" --json "$out/$name.json" --csv "$out/$name.csv" >/dev/null
}

splice() { # NAME: replace the generated block NAME of docs/RESULTS.md with the run's summary
    local name=$1 doc=docs/RESULTS.md summary
    summary=$(mktemp)
    "$paraes" bench --from-json "$out/$name.json" >"$summary"
    grep -qx "<!-- figures.sh: $name -->" "$doc" && grep -qx "<!-- /figures.sh: $name -->" "$doc" || {
        echo "figures.sh: $doc has no <!-- figures.sh: $name --> block" >&2
        exit 1
    }
    awk -v begin="<!-- figures.sh: $name -->" -v end="<!-- /figures.sh: $name -->" -v src="$summary" '
        $0 == begin { print; print ""; while ((getline line < src) > 0) print line; print ""; skip = 1; next }
        $0 == end { skip = 0 }
        !skip { print }' "$doc" >"$doc.tmp"
    mv "$doc.tmp" "$doc"
    rm -f "$summary"
}

if [ "$measure" = 1 ]; then
    bench sweep --backend cpu,sunway-sim --impl all --mode ctr --bits 128 --sizes 16B..256MiB \
        --repeat 7 --baseline openssl --plot docs/bench-throughput.svg
    bench pyaes --backend cpu --impl all --mode ctr --bits 128 --sizes 23000 --repeat 21 \
        --baseline openssl
    bench e2e --backend cpu --mode ctr --bits 128 --sizes 1MiB..256MiB --e2e --repeat 5 \
        --baseline none
fi
for name in sweep pyaes e2e; do
    splice "$name"
done

if [ "$sunway" = 1 ]; then
    {
        echo "# Output of the paraes-sunway-sim \`reproduce\` example (scripts/figures.sh)"
        echo
        cargo run --release -p paraes-sunway-sim --example reproduce -- docs
    } >docs/sunway-reproduce.md
fi
echo "figures.sh: done; $(uptime)"
