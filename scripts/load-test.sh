#!/usr/bin/env bash
# Load test of paraes (issue 8, "Load"): big files and many small files, with figures.
#
#   scripts/load-test.sh [--dir DIR] [--sizes "1G 8G 32G"] [--small N] [--small-max BYTES]
#                        [--interval S] [--skip-big] [--skip-small] [--skip-lib] [--no-null]
#
# 1. Big files, one size at a time (never in parallel): random-looking input made cheaply with
#    `openssl enc -aes-128-ctr` over /dev/zero (GB/s; not sparse, not zeros, incompressible),
#    its SHA-256 (`openssl dgst -sha256`, SHA-NI), `paraes enc`, `paraes dec`, the SHA-256 of the
#    decrypted copy, compared. Each paraes run is under /usr/bin/time (wall time, peak RSS =
#    ru_maxrss) while a sampler reads /proc/PID/io (wchar: bytes written) and VmRSS every
#    --interval seconds into DIR/logs/*.tsv: the throughput over time. Also, unless --no-null,
#    `paraes enc -o /dev/null` of the same input: the rate without the output disk.
#    When the disk cannot hold input + container + decrypted copy, it goes in two passes: the
#    input is deleted after hashing and encrypting, before decrypting. Files are deleted after
#    each size. GB/s are 10^9 bytes per second; sizes are GiB (2^30).
# 2. Small files through the CLI: N (default 10000) enc/dec round trips of random sizes
#    0..--small-max (default 65536) bytes from /dev/urandom, each compared with cmp, each
#    paraes process's peak RSS recorded; reports mismatches, the peak RSS of the first and last
#    100 trips, files left in the directory and stray `paraes watch-output` processes.
# 3. Small files in one process through the library: the leak_loop example of paraes-core
#    (crates/paraes-core/examples/leak_loop.rs), which checks its own VmRSS, fds and threads.
#
# DIR defaults to target/load-test (a real disk: do not point big sizes at a tmpfs). Everything
# it creates lives in DIR; DIR/logs keeps the samples and the summary (DIR/logs/summary.txt).
# Exit status: non-zero when any round trip mismatched or the leak check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

dir=target/load-test
sizes="1G 8G 32G"
small=10000
small_max=65536
interval=1
do_big=1
do_small=1
do_lib=1
do_null=1
while [ $# -gt 0 ]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --small) small=$2; shift 2 ;;
    --small-max) small_max=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --skip-big) do_big=0; shift ;;
    --skip-small) do_small=0; shift ;;
    --skip-lib) do_lib=0; shift ;;
    --no-null) do_null=0; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "load-test: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done

mkdir -p "$dir/logs"
dir=$(cd "$dir" && pwd)
logs=$dir/logs
summary=$logs/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=0

echo "== build"
cargo build --release --quiet
paraes=$root/target/release/paraes

bytes_of() { # 8G -> 8589934592 (binary units; plain numbers are bytes)
  local n=${1%[KkMmGgTt]} unit=${1: -1}
  case $unit in
    K|k) echo $((n << 10)) ;; M|m) echo $((n << 20)) ;; G|g) echo $((n << 30)) ;;
    T|t) echo $((n << 40)) ;; *) echo "$1" ;;
  esac
}
avail() { df -B1 --output=avail "$dir" | tail -1 | tr -d ' '; }
sha() { openssl dgst -sha256 -r "$1" | cut -d' ' -f1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

say "== machine ($(date -u '+%F %T UTC'))"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
  "memory: $(free -g | awk '/Mem:/{print $2}') GiB; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
say "disk: $(df -h --output=source,fstype,size,avail "$dir" | tail -1 | tr -s ' ')" \
  "(rotational=$(cat /sys/block/"$(basename "$(df --output=source "$dir" | tail -1)")"/queue/rotational 2>/dev/null || echo '?'))"
say "paraes: $("$paraes" --version 2>/dev/null || echo "$paraes")"

key=$dir/load.key
rm -f "$key"
"$paraes" keygen -o "$key"

# measure NAME -- COMMAND...: runs COMMAND under /usr/bin/time, sampling its /proc/PID/io wchar
# and VmRSS every $interval s into $logs/NAME.tsv; sets m_wall (s) and m_rss (KiB, peak).
measure() {
  local name=$1; shift 2
  local tfile=$logs/$name.time log=$logs/$name.tsv pid child t0 t wchar rss
  /usr/bin/time -f '%e %M' -o "$tfile" "$@" &
  pid=$!
  t0=$(now)
  printf 't_s\twchar_bytes\tvmrss_kib\n' >"$log"
  child=""
  while kill -0 "$pid" 2>/dev/null; do
    [ -n "$child" ] || child=$(pgrep -P "$pid" | head -1 || true)
    if [ -n "$child" ] && [ -r "/proc/$child/io" ]; then
      wchar=$(awk '/^wchar:/{print $2}' "/proc/$child/io" 2>/dev/null || true)
      rss=$(awk '/^VmRSS:/{print $2}' "/proc/$child/status" 2>/dev/null || true)
      t=$(now)
      [ -n "$wchar" ] && printf '%.2f\t%s\t%s\n' "$(awk -v a="$t0" -v b="$t" 'BEGIN { print b - a }')" "$wchar" "${rss:-0}" >>"$log"
    fi
    sleep "$interval"
  done
  wait "$pid" || { echo "load-test: $name failed: $*" >&2; return 1; }
  read -r m_wall m_rss <"$tfile"
}

# drift LOG: per-interval write rates of a sample log, as "min/median/max MB/s, first quarter
# vs last quarter MB/s", skipping the first and last interval (start-up, final fsync).
drift() {
  awk -F'\t' 'NR > 1 { t[n] = $1; w[n] = $2; n++ }
    END {
      m = 0
      for (i = 2; i < n - 1; i++) if (t[i] > t[i-1]) r[m++] = (w[i] - w[i-1]) / (t[i] - t[i-1]) / 1e6
      if (m < 4) { print "too short to sample"; exit }
      for (i = 0; i < m; i++) s[i] = r[i]
      for (i = 1; i < m; i++) { v = s[i]; for (j = i - 1; j >= 0 && s[j] > v; j--) s[j+1] = s[j]; s[j+1] = v }
      q = int(m / 4); a = 0; b = 0
      for (i = 0; i < q; i++) { a += r[i]; b += r[m - 1 - i] }
      printf "%d samples: min %.0f / median %.0f / max %.0f MB/s; first quarter %.0f, last quarter %.0f MB/s", m, s[0], s[int(m/2)], s[m-1], a / q, b / q
    }' "$1"
}

gbps() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2f", b / s / 1e9; else print "-" }'; }

if [ "$do_big" = 1 ]; then
  say ""
  say "== big files (one at a time; input: openssl enc -aes-128-ctr over /dev/zero)"
  rows=()
  for size in $sizes; do
    n=$(bytes_of "$size")
    margin=$((2 << 30))
    if [ "$(avail)" -lt $((2 * n + margin)) ]; then
      say "$size: skipped: needs $(((2 * n + margin) >> 30)) GiB free in $dir, have $(($(avail) >> 30)) GiB"
      rows+=("$(printf '%-6s %s' "$size" "skipped (disk)")")
      continue
    fi
    two_pass=0
    [ "$(avail)" -ge $((3 * n + margin)) ] || two_pass=1
    in=$dir/big-$size.bin
    say "-- $size ($n bytes)$([ $two_pass = 1 ] && echo ', two passes: input deleted before dec')"
    t=$(now)
    openssl enc -aes-128-ctr -K "$(printf '%032x' "$n")" -iv "$(printf '%032x' 0)" </dev/zero 2>/dev/null \
      | head -c "$n" >"$in" || true # openssl ends on SIGPIPE when head has enough
    [ "$(stat -c %s "$in")" = "$n" ] || { echo "load-test: could not make $n bytes of input" >&2; exit 1; }
    say "   generated in $(since "$t") s"
    t=$(now)
    h_in=$(sha "$in")
    say "   sha256 in  $h_in ($(since "$t") s)"
    null_col="-"
    if [ "$do_null" = 1 ]; then
      measure "null-$size" -- "$paraes" enc -q -k "$key" "$in" -o /dev/null
      null_col=$(gbps "$n" "$m_wall")
      say "   enc -o /dev/null: $m_wall s, $null_col GB/s, peak RSS $m_rss KiB"
    fi
    measure "enc-$size" -- "$paraes" enc -q -k "$key" "$in" -o "$in.paraes"
    e_wall=$m_wall e_rss=$m_rss
    say "   enc: $e_wall s, $(gbps "$n" "$e_wall") GB/s, peak RSS $e_rss KiB; $(drift "$logs/enc-$size.tsv")"
    [ $two_pass = 1 ] && rm -f "$in"
    measure "dec-$size" -- "$paraes" dec -q -k "$key" "$in.paraes" -o "$in.out"
    d_wall=$m_wall d_rss=$m_rss
    say "   dec: $d_wall s, $(gbps "$n" "$d_wall") GB/s, peak RSS $d_rss KiB; $(drift "$logs/dec-$size.tsv")"
    h_out=$(sha "$in.out")
    match=yes
    [ "$h_in" = "$h_out" ] || { match=NO; failed=1; }
    say "   sha256 out $h_out: match $match"
    rm -f "$in" "$in.paraes" "$in.out"
    rows+=("$(printf '%-6s %8s %8s %7s %7s %7s %11s %11s %5s' "$size" "$e_wall" "$d_wall" \
      "$(gbps "$n" "$e_wall")" "$(gbps "$n" "$d_wall")" "$null_col" "$e_rss" "$d_rss" "$match")")
  done
  say ""
  say "$(printf '%-6s %8s %8s %7s %7s %7s %11s %11s %5s' size enc_s dec_s enc_GB/s dec_GB/s null_GB/s \
    enc_RSS_KiB dec_RSS_KiB sha=)"
  for row in "${rows[@]}"; do say "$row"; done
  say "(null_GB/s: paraes enc -o /dev/null, no output disk; samples in $logs/{enc,dec,null}-SIZE.tsv)"
fi

if [ "$do_small" = 1 ]; then
  say ""
  say "== small files through the CLI: $small round trips, sizes 0..$small_max bytes"
  sdir=$dir/small
  rm -rf "$sdir"
  mkdir -p "$sdir"
  rss_log=$logs/small-cli-rss.tsv
  printf 'trip\tsize\tenc_rss_kib\tdec_rss_kib\n' >"$rss_log"
  watchers_before=$(pgrep -c -f 'paraes watch-output' || true)
  mismatches=0 errors=0 total=0
  t=$(now)
  for ((i = 1; i <= small; i++)); do
    len=$(((RANDOM << 15 | RANDOM) % (small_max + 1)))
    total=$((total + len))
    f=$sdir/f$i.bin
    head -c "$len" /dev/urandom >"$f"
    if /usr/bin/time -f '%M' -o "$sdir/.e" "$paraes" enc -q -k "$key" "$f" -o "$f.paraes" \
      && /usr/bin/time -f '%M' -o "$sdir/.d" "$paraes" dec -q -k "$key" "$f.paraes" -o "$f.out"; then
      cmp -s "$f" "$f.out" || { mismatches=$((mismatches + 1)); echo "mismatch: trip $i, $len bytes" >&2; }
      printf '%d\t%d\t%s\t%s\n' "$i" "$len" "$(tail -1 "$sdir/.e")" "$(tail -1 "$sdir/.d")" >>"$rss_log"
    else
      errors=$((errors + 1))
      echo "error: trip $i, $len bytes" >&2
    fi
    rm -f "$f" "$f.paraes" "$f.out"
    if ((i % 1000 == 0)); then echo "   $i trips, $(since "$t") s"; fi
  done
  secs=$(since "$t")
  rm -f "$sdir/.e" "$sdir/.d"
  left=$(find "$sdir" -mindepth 1 | wc -l)
  watchers_after=$(pgrep -c -f 'paraes watch-output' || true)
  say "$small trips in $(printf '%.0f' "$secs") s, $((total >> 20)) MiB of plaintext:" \
    "$mismatches mismatches, $errors errors; files left in $sdir: $left;" \
    "paraes watch-output processes before/after: $watchers_before/$watchers_after"
  rss_stats() { # FIRST LAST COLUMN: "min/mean/max" of a column over trips FIRST..LAST
    awk -F'\t' -v a="$1" -v b="$2" -v c="$3" 'NR > 1 && $1 >= a && $1 <= b {
        v = $c; s += v; n++; if (n == 1 || v < lo) lo = v; if (v > hi) hi = v }
      END { if (n) printf "%d/%.0f/%d", lo, s / n, hi; else print "-" }' "$rss_log"
  }
  say "per-process peak RSS KiB (min/mean/max): enc first 100 $(rss_stats 1 100 3), last 100" \
    "$(rss_stats $((small - 99)) "$small" 3); dec first 100 $(rss_stats 1 100 4), last 100" \
    "$(rss_stats $((small - 99)) "$small" 4)"
  rmdir "$sdir" 2>/dev/null || true
  [ "$mismatches" = 0 ] && [ "$errors" = 0 ] && [ "$left" = 0 ] || failed=1
fi

if [ "$do_lib" = 1 ]; then
  say ""
  say "== small files in one process through the library (leak_loop example)"
  cargo build --release --quiet -p paraes-core --example leak_loop
  if ! "$root/target/release/examples/leak_loop" --iterations "$small" --max-size "$small_max" \
    --dir "$dir/lib" 2>&1 | tee -a "$summary"; then
    failed=1
  fi
  rmdir "$dir/lib" 2>/dev/null || true
fi

rm -f "$key"
say ""
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); summary: $summary"
[ "$failed" = 0 ] && say "load-test: PASS" || say "load-test: FAIL"
exit "$failed"
