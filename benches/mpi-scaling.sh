#!/usr/bin/env bash
# Strong scaling of `paraes enc --backend mpi` on one machine: the same file encrypted by 1 and
# 2 ranks (1 AES thread per rank), both I/O strategies, beside the single-process tool with 1
# AES thread, in the same run. Both sides run the same pipeline (reader, engine, MAC and writer
# threads), so `--threads 1` is the same on both. The runners take turns within each repeat
# (alternating, so a burst of load from elsewhere hits them all alike). Prints a table of
# median/min wall seconds, GB/s, the ratio to the single-process tool, parallel efficiency
# (T1 / (n * Tn), T1 the same strategy's one-rank median), the median CPU seconds of the
# whole command (user + system, all its processes), and the same ratios for the tool's own
# data-pass time (`--stats json` "seconds": after start-up, so without the process's and MPI's
# start-up, about 0.1 s for MPICH's MPI_Init here), with the load average before and after.
# Two blocks: free (every process may use every core; the pipeline's threads overlap on both
# cores, so one rank already uses more than one core) and pinned (one core per rank: the
# single-process tool and one rank under `taskset -c 0`, ranks under `mpiexec -bind-to core`),
# which measures scaling per core. Ratios compare runners of the same block.
# The last columns are issue 40's parallel efficiency: the single-process tool's median over
# (ranks x the runner's median), in wall time and in pass time.
# Needs a binary built with --features mpi and the launcher of the MPI library it links
# (MPI_LAUNCHER, default mpiexec: e.g. MPI_LAUNCHER=mpiexec.mpich, or
# MPI_LAUNCHER="mpirun.openmpi --oversubscribe --allow-run-as-root" with PARAES built against
# Open MPI; `ldd $PARAES` says which).
#   benches/mpi-scaling.sh [SIZE_MIB=1024] [REPEATS=7] [DIR=/dev/shm]
set -euo pipefail
size_mib=${1:-1024}
repeats=${2:-7}
dir=${3:-/dev/shm}
paraes=${PARAES:-target/release/paraes}
read -r -a launcher <<< "${MPI_LAUNCHER:-mpiexec}"
[ -x "$paraes" ] || { echo "build first: cargo build --release --features mpi" >&2; exit 1; }
work=$(mktemp -d "$dir/paraes-mpi-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c $((size_mib << 20)) /dev/urandom > "$work/in"
"$paraes" keygen -o "$work/k"
bytes=$((size_mib << 20))

enc=(enc -q --stats json -k "$work/k" "$work/in" -o "$work/out" --threads 1)
names=("single process (pipeline)" "mpi direct" "mpi direct" "mpi scatter" "mpi scatter")
names+=("${names[@]/%/, pinned}")
ranks=(1 1 2 1 2 1 1 2 1 2)
run_case() {
  local pin=() bind=() n=${ranks[$1]}
  if [ "$1" -ge 5 ]; then pin=(taskset -c 0) bind=(-bind-to core); fi
  case $(($1 % 5)) in
    0) "${pin[@]}" "$paraes" "${enc[@]}" --backend cpu ;;
    1 | 2) "${launcher[@]}" -n "$n" "${bind[@]}" "$paraes" "${enc[@]}" --backend mpi --mpi-io direct ;;
    3 | 4) "${launcher[@]}" -n "$n" "${bind[@]}" "$paraes" "${enc[@]}" --backend mpi --mpi-io scatter ;;
  esac
}

# "wall user sys pass" of each run, one file per case
load_before=$(cut -d" " -f1-3 /proc/loadavg)
TIMEFORMAT='%R %U %S'
for _ in $(seq "$repeats"); do
  for c in "${!names[@]}"; do
    rm -f "$work/out"
    { time run_case "$c" > /dev/null 2> "$work/err"; } 2> "$work/time" \
      || { cat "$work/err" >&2; exit 1; }
    pass=$(grep -o '"seconds":[0-9.e-]*' "$work/err" | cut -d: -f2)
    echo "$(cat "$work/time") $pass" >> "$work/times.$c"
  done
done

# median and min wall seconds, median CPU seconds, median pass seconds of case $1
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
stats() {
  local med min cpu pass
  med=$(cut -d' ' -f1 "$work/times.$1" | median)
  min=$(cut -d' ' -f1 "$work/times.$1" | sort -g | head -1)
  cpu=$(awk '{print $2 + $3}' "$work/times.$1" | median)
  pass=$(cut -d' ' -f4 "$work/times.$1" | median)
  echo "$med $min $cpu $pass"
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; ${size_mib} MiB in $dir; $repeats runs each, alternating; ${launcher[*]}: $("${launcher[0]}" --version 2>&1 | grep -m1 -i -e "version" -e "openrte" | xargs); $(ldd "$paraes" | grep -o 'libmpi[a-z_]*\.so[.0-9]*' | sort -u | xargs)"
echo "# load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %5s %8s %8s %6s %9s %10s %6s %7s %9s %10s %12s %12s\n' runner ranks median_s min_s GB/s \
  vs_single efficiency cpu_s pass_s vs_single efficiency eff_vs_single pass_vs_single
base=""
for c in "${!names[@]}"; do
  [ $((c % 5)) = 0 ] && read -r single _ _ single_pass < <(stats "$c")
  read -r med min cpu pass < <(stats "$c")
  n=${ranks[$c]}
  [ "$n" = 1 ] && base=$med && base_pass=$pass
  gbs=$(echo "$bytes / $med / 1000000000" | bc -l)
  vs=$(echo "$single / $med" | bc -l)
  vs_pass=$(echo "$single_pass / $pass" | bc -l)
  eff=- eff_pass=-
  eff_single=$(printf '%.1f%%' "$(echo "$single / ($n * $med) * 100" | bc -l)")
  eff_single_pass=$(printf '%.1f%%' "$(echo "$single_pass / ($n * $pass) * 100" | bc -l)")
  if [ $((c % 5)) != 0 ]; then
    eff=$(printf '%.1f%%' "$(echo "$base / ($n * $med) * 100" | bc -l)")
    eff_pass=$(printf '%.1f%%' "$(echo "$base_pass / ($n * $pass) * 100" | bc -l)")
  fi
  printf '%-34s %5s %8.3f %8.3f %6.2f %9.2f %10s %6.2f %7.3f %9.2f %10s %12s %12s\n' "${names[$c]}" "$n" \
    "$med" "$min" "$gbs" "$vs" "$eff" "$cpu" "$pass" "$vs_pass" "$eff_pass" "$eff_single" "$eff_single_pass"
done
