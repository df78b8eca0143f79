#!/usr/bin/env bash
# Issue 14's measurements, in one run on one machine (docs/RESULTS.md, "Containers at scale"):
#   1. N small files (default 10,000 x 4 KiB): one `paraes enc` run vs a shell loop of one run
#      per file;
#   2. M large files (default 8 x 512 MiB): one run vs M sequential runs vs the single-file
#      speed (one file of the same size, times M);
#   3. `paraes verify` vs `paraes dec -o /dev/null` of one large container (default 4 GiB);
#   4. a 1 MiB `dec --range` of that container vs the whole-file dec: time and bytes read.
# Medians (and minima) of REPEATS runs, wall-clock; files in DIR (tmpfs by default, so the
# storage is not what is measured).
#   benches/many-files.sh [SMALL_COUNT=10000] [LARGE_MIB=512] [BIG_GIB=4] [REPEATS=5] [DIR=/dev/shm]
set -euo pipefail
small_count=${1:-10000}
large_mib=${2:-512}
big_gib=${3:-4}
repeats=${4:-5}
dir=${5:-/dev/shm}
large_count=8
paraes=$(realpath "${PARAES:-target/release/paraes}")
[ -x "$paraes" ] || { echo "build first: cargo build --release" >&2; exit 1; }
work=$(mktemp -d "$dir/paraes-many-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
"$paraes" keygen -o k

# seconds of one run of "$@"
once() {
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

# median and min of REPEATS runs of "$@" (after `before`, untimed, each time)
timed() {
  local times=()
  for _ in $(seq "$repeats"); do
    eval "$before"
    times+=("$(once "$@")")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[int((NR+1)/2)], a[1]}'
}

row() { printf '%-52s %10s %10s %s\n' "$@"; }

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(uname -sr); paraes $("$paraes" --version | cut -d' ' -f2); files in $dir; $repeats runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
row "case" median_s min_s note

# 1. many small files
mkdir small
for i in $(seq -w 1 "$small_count"); do head -c 4096 /dev/urandom > "small/$i"; done
before='rm -rf out; mkdir out'
read -r med min < <(timed "$paraes" enc -q -k k --recursive small --output-dir out)
row "$small_count x 4 KiB: one run (--recursive)" "$med" "$min" "$(ls out/small | wc -l) outputs"
one_run=$med
# The shell loop runs once (it takes minutes): one process per file, as before issue 14.
rm -rf out; mkdir out
loop=$(once bash -c 'for f in small/*; do "$0" enc -q -k k "$f" -o "out/${f#small/}.paraes"; done' "$paraes")
row "$small_count x 4 KiB: shell loop, one run per file" "$(printf %.3f "$loop")" - "1 loop; $(echo "$loop / $one_run" | bc -l | xargs printf '%.1f')x the one run"
rm -rf small out

# 2. large files: the three ways take turns in every repeat, so load and memory state spread
# evenly over them
mkdir large
for i in $(seq 1 $large_count); do head -c $((large_mib << 20)) /dev/urandom > "large/$i"; done
one=() seq=() single=()
for _ in $(seq "$repeats"); do
  rm -f large/*.paraes
  one+=("$(once "$paraes" enc -q -k k large/1 large/2 large/3 large/4 large/5 large/6 large/7 large/8)")
  rm -f large/*.paraes
  seq+=("$(once bash -c 'for f in large/?; do "$0" enc -q -k k "$f"; done' "$paraes")")
  rm -f large/*.paraes
  single+=("$(echo "$(once "$paraes" enc -q -k k large/1) * $large_count" | bc -l)")
done
stats() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[int((NR+1)/2)], a[1]}'; }
gibs() { echo "$large_count * $large_mib / 1024 / $1" | bc -l | xargs printf '%.2f GiB/s'; }
read -r med min < <(stats "${one[@]}")
row "$large_count x $large_mib MiB: one run" "$med" "$min" "$(gibs "$med")"
read -r med min < <(stats "${seq[@]}")
row "$large_count x $large_mib MiB: $large_count sequential runs" "$med" "$min" "$(gibs "$med")"
read -r med min < <(stats "${single[@]}")
row "1 x $large_mib MiB (single-file speed) x $large_count" "$med" "$min" "$(gibs "$med")"
rm -rf large

# 3 and 4. one big container
head -c $((big_gib << 30)) /dev/urandom > big
"$paraes" enc -q -k k big
rm big
mid=$(( (big_gib << 30) / 2 + 12345 ))
range="$mid..$((mid + (1 << 20)))"
verify=() dec=() part=()
for _ in $(seq "$repeats"); do
  verify+=("$(once "$paraes" verify -q -k k big.paraes)")
  dec+=("$(once "$paraes" dec -q -k k big.paraes -o /dev/null)")
  part+=("$(once "$paraes" dec -q -k k big.paraes --range "$range" -o /dev/null)")
done
read_range=$("$paraes" dec -q -k k big.paraes --range "$range" -o /dev/null --stats json 2>&1 | sed 's/.*"bytes_in":\([0-9]*\).*/\1/')
read_whole=$("$paraes" dec -q -k k big.paraes -o /dev/null --stats json 2>&1 | sed 's/.*"bytes_in":\([0-9]*\).*/\1/')
read -r med min < <(stats "${verify[@]}")
row "verify, $big_gib GiB" "$med" "$min" "$(echo "$big_gib / $med" | bc -l | xargs printf '%.2f') GiB/s"
read -r med min < <(stats "${dec[@]}")
row "dec -o /dev/null, $big_gib GiB (whole file)" "$med" "$min" "$(echo "$big_gib / $med" | bc -l | xargs printf '%.2f') GiB/s; read $read_whole bytes"
read -r med min < <(stats "${part[@]}")
row "dec --range, 1 MiB of $big_gib GiB" "$med" "$min" "read $read_range bytes"
