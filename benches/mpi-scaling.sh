#!/usr/bin/env bash
# Strong scaling of `paraes enc --backend mpi` on one machine: the same file encrypted by 1 and
# 2 ranks (1 thread per rank), both I/O strategies, beside the single-process tool with 1
# thread, in the same run. Prints a table of median/min seconds, GB/s and parallel efficiency
# (T1 / (n * Tn)). Needs a binary built with --features mpi and MPICH's mpiexec.
#   benches/mpi-scaling.sh [SIZE_MIB=1024] [REPEATS=7] [DIR=/dev/shm]
set -euo pipefail
size_mib=${1:-1024}
repeats=${2:-7}
dir=${3:-/dev/shm}
paraes=${PARAES:-target/release/paraes}
[ -x "$paraes" ] || { echo "build first: cargo build --release --features mpi" >&2; exit 1; }
work=$(mktemp -d "$dir/paraes-mpi-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c $((size_mib << 20)) /dev/urandom > "$work/in"
"$paraes" keygen -o "$work/k"
bytes=$((size_mib << 20))

# median and min of the wall-clock seconds of REPEATS runs of "$@"
time_runs() {
  local times=()
  for _ in $(seq "$repeats"); do
    rm -f "$work/out"
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.4f %.4f\n", a[int((NR+1)/2)], a[1]}'
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; ${size_mib} MiB in $dir; $repeats runs; $(mpiexec --version | grep -m1 Version | xargs)"
printf '%-28s %5s %10s %10s %8s %10s\n' runner ranks median_s min_s GB/s efficiency
enc=(enc -q -k "$work/k" "$work/in" -o "$work/out" --threads 1)
read -r med min < <(time_runs "$paraes" "${enc[@]}" --backend cpu)
printf '%-28s %5s %10s %10s %8.2f %10s\n' "single process (pipeline)" 1 "$med" "$min" "$(echo "$bytes / $med / 1000000000" | bc -l)" -
for io in direct scatter; do
  base=""
  for n in 1 2; do
    read -r med min < <(time_runs mpiexec -n "$n" "$paraes" "${enc[@]}" --backend mpi --mpi-io "$io")
    [ -z "$base" ] && base=$med
    eff=$(echo "$base / ($n * $med) * 100" | bc -l)
    printf '%-28s %5s %10s %10s %8.2f %9.1f%%\n' "mpi $io" "$n" "$med" "$min" "$(echo "$bytes / $med / 1000000000" | bc -l)" "$eff"
  done
done
