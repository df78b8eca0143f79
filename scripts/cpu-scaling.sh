#!/usr/bin/env bash
# CPU scaling of a prebuilt paraes on a many-core Linux box (issue 37, item 6).
#
#   scripts/cpu-scaling.sh [PARAES_BINARY]        (or PARAES=PATH; settings below as VAR=...)
#
# Made for the device machine's 16-core host, which has no Rust and no network: build here,
# carry the binary, run this there (docs/BENCH.md, "Many cores"). It needs bash, coreutils (GNU
# dd, head, cat, cp, df, cmp, tee) and python3 (3.8 or newer); nothing else.
#
# What it measures, in this order:
#   1. The machine: nproc, CPU model and the AES-related flags (aes vaes avx512f vpclmulqdq ...),
#      memory, kernel, /dev/shm; the binary's --version and the commit it was built from
#      (COMMIT=..., or a COMMIT file beside the binary; the commit the binary embeds is read
#      from `paraes bench --json` and must agree with either).
#   2. `paraes bench -b cpu -m ctr,gcm --bits 256 --sizes BENCH_SIZES --threads T --repeat
#      BENCH_REPEAT --baseline none` for every T of the thread list (each run also measures the
#      one-thread engine, its speedup baseline): in memory, no files.
#   3. Whole files: a SIZE file of random-looking bytes in SHM (tmpfs), and its container. Each
#      round runs every command below once, in this order (ROUNDS rounds, interleaved, so drift
#      shows); the table gives min, median and max seconds:
#        cat f > /dev/null; N dd readers at their own offsets to /dev/null (N = MAX_THREADS, the
#        parallel read bound); paraes enc -k K -o /dev/null f, default threads, then --threads T
#        for each T; paraes dec of the container to /dev/null, the same; paraes verify; paraes
#        enc to a file in SHM, then cp f g; cat f | paraes enc -k K > /dev/null, then
#        cat f | cat > /dev/null.
#      Before the rounds the container is decrypted once and compared with f (cmp).
#   4. Peak RSS of each paraes command of step 3 that runs on its own (not in a pipeline), in one
#      more untimed pass: under GNU /usr/bin/time (%M, the process's ru_maxrss) where it is
#      installed, else VmHWM read from /proc/PID/status every 2 ms while it runs (a lower
#      bound, said so), else "not measured". The timed rounds run no wrapper.
#
# Settings (environment):
#   PARAES        the binary (or the first argument)
#   SIZE          whole-file size: bytes or with K/M/G/T (KiB..TiB), e.g. 4G, 256M [4G]
#   ROUNDS        whole-file rounds [3]
#   QUICK=1       SIZE=256M, ROUNDS=1, BENCH_REPEAT=3 (each unless set explicitly)
#   MAX_THREADS   the largest thread count, and the number of dd readers [nproc]; the thread
#                 list is 1, 2, 4, ... up to it (and it)
#   BENCH_SIZES   paraes bench --sizes [1MiB,16MiB,256MiB]
#   BENCH_REPEAT  paraes bench --repeat [5]
#   BENCH=0       skip step 2
#   BUDGET_S      no round starts once the run's time so far plus the last round's would pass
#                 this many seconds; the cut is said loudly and recorded [480]
#   SHM           where the files go [/dev/shm]
#   OUT           output folder [./cpu-scaling-out]: report.txt (this output), results.json
#                 (everything), files.csv (every whole-file sample), bench-tT.{json,csv,txt}
#                 (each bench run as paraes wrote it), machine.json
#   COMMIT        the commit the binary was built from (else the file COMMIT beside it)
#   RSS           how step 4 measures: auto (time, else proc), time, proc, none [auto]
#
# Wall time, estimated from issue 37's 2026-11-27 figures on that 16-core host (4 GiB file:
# cat 0.7 s, enc/dec 0.75-1 s per run, enc to file 1.9 s, cp 1.6 s, cat | enc 2.3 s): about
# 20 s per round, so about 60 s for 3 rounds; making the files and the check about 10 s; the
# RSS pass about 10 s; the bench runs (4 runs x 12 rows, each a 100 ms warm-up and 5 samples)
# about 20-30 s. In all about 2 minutes at the defaults, under 1 minute with QUICK=1; BUDGET_S
# keeps it under about 9 minutes even if paraes were several times slower than that. Needs 3 x SIZE + 128 MiB free in
# SHM (f, its container, one output at a time) and as much available memory plus 1 GiB.
#
# It stops at the first failure with one "cpu-scaling: error:" line (exit status 1); every
# number it prints was measured in this run. Its files in SHM and the key go on any exit.
set -euo pipefail

me=cpu-scaling
die() { echo "$me: error: $*" >&2; exit 1; }
say() { printf '%s\n' "$*"; }

case ${1:-} in
  -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -le 1 ] || die "one argument at most, the paraes binary (settings go in the environment; --help)"

# ---- settings -------------------------------------------------------------------------------
paraes=${1:-${PARAES:-}}
[ -n "$paraes" ] || die "no paraes binary: give its path as the argument or PARAES=PATH"
[ -f "$paraes" ] || die "$paraes: no such file (the paraes binary)"
[ -x "$paraes" ] || die "$paraes: not executable"
paraes=$(cd "$(dirname "$paraes")" && pwd)/$(basename "$paraes")

quick=${QUICK:-0}
if [ "$quick" = 1 ]; then
  size_arg=${SIZE:-256M}; rounds=${ROUNDS:-1}; bench_repeat=${BENCH_REPEAT:-3}
else
  size_arg=${SIZE:-4G}; rounds=${ROUNDS:-3}; bench_repeat=${BENCH_REPEAT:-5}
fi
bench_sizes=${BENCH_SIZES:-1MiB,16MiB,256MiB}
do_bench=${BENCH:-1}
rss_how=${RSS:-auto}
budget_s=${BUDGET_S:-480}
shm=${SHM:-/dev/shm}
out=${OUT:-./cpu-scaling-out}

for tool in python3 dd head cat cp df cmp tee nproc uname mktemp stat; do
  command -v "$tool" >/dev/null || die "$tool is not installed (needed to measure)"
done
python3 -c 'import os, sys; assert sys.version_info >= (3, 8) and hasattr(os, "posix_spawn") and hasattr(os, "wait4")' 2>/dev/null ||
  die "python3 3.8 or newer with os.posix_spawn and os.wait4 is needed"
dd if=/dev/zero of=/dev/null bs=4096 iflag=skip_bytes,count_bytes skip=1 count=100 status=none 2>/dev/null ||
  die "dd does not take iflag=skip_bytes,count_bytes (GNU coreutils dd is needed)"

[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS=$rounds: a whole number of at least 1"
[[ $bench_repeat =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT=$bench_repeat: a whole number of at least 1"
[[ $budget_s =~ ^[1-9][0-9]*$ ]] || die "BUDGET_S=$budget_s: a whole number of seconds"
[[ $do_bench =~ ^[01]$ ]] || die "BENCH=$do_bench: 0 or 1"
[[ $rss_how =~ ^(auto|time|proc|none)$ ]] || die "RSS=$rss_how: auto, time, proc or none"

if [[ $size_arg =~ ^([0-9]+)(|B|K|KiB|M|MiB|G|GiB|T|TiB)$ ]]; then
  case ${BASH_REMATCH[2]} in
    ''|B) mult=1 ;; K|KiB) mult=$((1 << 10)) ;; M|MiB) mult=$((1 << 20)) ;;
    G|GiB) mult=$((1 << 30)) ;; T|TiB) mult=$((1 << 40)) ;;
  esac
  size=$((10#${BASH_REMATCH[1]} * mult))
else
  die "SIZE=$size_arg: bytes, or a whole number with K, M, G or T (binary: 4G = 4 GiB)"
fi
[ "$size" -ge $((1 << 20)) ] || die "SIZE=$size_arg: at least 1 MiB"

ncpu=$(nproc)
max_threads=${MAX_THREADS:-$ncpu}
[[ $max_threads =~ ^[1-9][0-9]*$ ]] || die "MAX_THREADS=$max_threads: a whole number of at least 1"
threads=()
for ((t = 1; t < max_threads; t *= 2)); do threads+=("$t"); done
threads+=("$max_threads")

mkdir -p "$out" || die "cannot make the output folder $out"
out=$(cd "$out" && pwd)
[ -w "$out" ] || die "$out: not writable"
# An earlier run's files would mix with this one's: they go.
rm -f -- "$out"/report.txt "$out"/results.json "$out"/files.csv "$out"/machine.json "$out"/bench.csv \
  "$out"/bench-t*.json "$out"/bench-t*.csv "$out"/bench-t*.txt

# ---- scratch space, cleaned on every exit ---------------------------------------------------
[ -d "$shm" ] && [ -w "$shm" ] || die "$shm: not a writable folder (set SHM to a tmpfs)"
work=$(mktemp -d "$shm/paraes-cpu-scaling.XXXXXX") || die "cannot make a folder in $shm"
keydir=""
tee_pid=""
child=""
# The long steps run in the background and are waited for, so that a signal stops the script
# at once (bash runs a trap only between commands) and the cleanup can stop them.
run_bg() {
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}
cleanup() {
  local rc=$?
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  if [ "$rc" != 0 ]; then
    echo "$me: stopped (exit status $rc); what was measured so far is in $out" >&2
  fi
  rm -rf -- "$work"
  if [ -n "$keydir" ]; then rm -rf -- "$keydir"; fi
  if [ -n "$tee_pid" ]; then
    exec 1>&3 2>&4
    wait "$tee_pid" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Everything printed from here on also goes to OUT/report.txt.
exec 3>&1 4>&2
exec > >(tee "$out/report.txt") 2>&1
tee_pid=$!

start_epoch=$(date +%s)
say "# paraes CPU scaling (scripts/cpu-scaling.sh), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "binary: $paraes"
say "settings: SIZE=$size_arg ($size bytes) ROUNDS=$rounds QUICK=$quick MAX_THREADS=$max_threads" \
  "threads=${threads[*]} BENCH=$do_bench BENCH_SIZES=$bench_sizes BENCH_REPEAT=$bench_repeat" \
  "BUDGET_S=$budget_s RSS=$rss_how SHM=$shm OUT=$out"

shm_avail=$(df -B1 --output=avail "$shm" | tail -n 1 | tr -d ' ')
need=$((3 * size + (128 << 20)))
[[ $shm_avail =~ ^[0-9]+$ ]] || die "cannot read the free space of $shm (df said '$shm_avail')"
[ "$shm_avail" -ge "$need" ] ||
  die "$shm has $((shm_avail >> 20)) MiB free; SIZE=$size_arg needs $((need >> 20)) MiB (f, its container, one output): a smaller SIZE, or SHM=another tmpfs"
mem_avail=$(($(sed -n 's/^MemAvailable: *\([0-9]*\) kB$/\1/p' /proc/meminfo) * 1024))
[ "$mem_avail" -ge $((need + (1 << 30))) ] ||
  die "$((mem_avail >> 20)) MiB of memory available; SIZE=$size_arg needs $(((need + (1 << 30)) >> 20)) MiB (tmpfs lives in memory): a smaller SIZE"

keydir=$(mktemp -d) || die "cannot make a temporary folder for the key"
chmod 700 "$keydir"
key=$keydir/k.key
"$paraes" keygen -o "$key" || die "paraes keygen -o $key failed"
[ "$(stat -c %a "$key")" = 600 ] || die "$key: mode $(stat -c %a "$key"), not 600"

helper=$work/cpu_scaling.py
cat >"$helper" <<'PY'
"""The measuring and reporting half of scripts/cpu-scaling.sh (written out by it)."""
import csv, json, os, shlex, signal, statistics, subprocess, sys, time

E = os.environ
OUT = E["CS_OUT"]
RUNNING = [None]  # the process group of the command being measured


def on_signal(signum, _frame):
    """The script was stopped: stop the command being measured (its whole group), then exit."""
    pid = RUNNING[0]
    if pid:
        try:
            os.killpg(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    sys.exit(128 + signum)


for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, on_signal)


def die(msg):
    print(f"cpu-scaling: error: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def machine():
    info = {"nproc": int(E["CS_NPROC"])}
    cpuinfo = read("/proc/cpuinfo") or ""
    flags, model = set(), None
    for line in cpuinfo.splitlines():
        k, _, v = line.partition(":")
        k = k.strip()
        if k == "flags" and not flags:
            flags = set(v.split())
        if k == "model name" and model is None:
            model = v.strip()
    lscpu = {}
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True, check=True)
        for line in r.stdout.splitlines():
            k, _, v = line.partition(":")
            lscpu[k.strip()] = v.strip()
        if not flags and lscpu.get("Flags"):
            flags = set(lscpu["Flags"].split())
    except (OSError, subprocess.CalledProcessError):
        pass
    info["cpu_model"] = lscpu.get("Model name") or model or "unknown"
    for k in ("Socket(s)", "Core(s) per socket", "Thread(s) per core", "NUMA node(s)", "Hypervisor vendor"):
        if k in lscpu:
            info["lscpu " + k] = lscpu[k]
    if not flags:
        die("no CPU flags in /proc/cpuinfo or lscpu")
    want = ["aes", "pclmulqdq", "avx2", "vaes", "vpclmulqdq", "avx512f", "avx512bw", "hypervisor"]
    info["flags_present"] = [f for f in want if f in flags]
    info["flags_absent"] = [f for f in want if f not in flags]
    mem = {}
    for line in (read("/proc/meminfo") or "").splitlines():
        k, _, v = line.partition(":")
        if k in ("MemTotal", "MemAvailable"):
            mem[k] = int(v.split()[0]) * 1024
    info["mem_total_bytes"] = mem.get("MemTotal")
    info["mem_available_bytes"] = mem.get("MemAvailable")
    u = os.uname()
    info["kernel"] = f"{u.sysname} {u.release} {u.machine}"
    st = os.statvfs(E["CS_SHM"])
    info["shm"] = E["CS_SHM"]
    info["shm_size_bytes"] = st.f_blocks * st.f_frsize
    info["shm_avail_bytes"] = st.f_bavail * st.f_frsize
    gov = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    info["cpufreq_governor"] = gov.strip() if gov else None
    info["loadavg_before"] = (read("/proc/loadavg") or "").split()[:3]
    with open(os.path.join(OUT, "machine.json"), "w") as f:
        json.dump(info, f, indent=2)
    gib = 1 << 30
    print(f"machine: {info['cpu_model']}; nproc {info['nproc']}", end="")
    for k in ("Socket(s)", "Core(s) per socket", "Thread(s) per core"):
        if "lscpu " + k in info:
            print(f"; {k.lower()} {info['lscpu ' + k]}", end="")
    print()
    print(f"  flags: {' '.join(info['flags_present'])} (absent: {' '.join(info['flags_absent']) or '-'})")
    print(f"  memory {info['mem_total_bytes'] / gib:.1f} GiB ({info['mem_available_bytes'] / gib:.1f} GiB available);"
          f" {info['shm']} {info['shm_size_bytes'] / gib:.1f} GiB ({info['shm_avail_bytes'] / gib:.1f} GiB free);"
          f" kernel {info['kernel']}; governor {info['cpufreq_governor'] or 'unknown'};"
          f" load {' '.join(info['loadavg_before'])}")


def commit():
    """The commit the binary embeds (from a bench probe's JSON) against the one stated."""
    with open(E["CS_PROBE"]) as f:
        doc = json.load(f)
    embedded = doc["paraes"]["commit"]
    stated = E.get("CS_COMMIT_STATED", "")
    print(f"commit: embedded in the binary {embedded}; stated {stated or '(none: no COMMIT, no COMMIT file)'}")
    base = embedded.split("-")[0]
    if base == "unknown" and not stated:
        die("the binary does not know its commit (built outside git): give COMMIT=... or a COMMIT file beside it")
    if base != "unknown" and stated and not (stated.startswith(base) or base.startswith(stated)):
        die(f"the binary was built from {embedded} but COMMIT says {stated}: the wrong binary, or the wrong COMMIT")
    if embedded.endswith("-dirty"):
        print("  NOTE: the binary was built from a tree that differed from that commit (-dirty)")
    return embedded, stated


def spawn(argv, log):
    """Runs argv (stdin and stdout /dev/null, stderr appended to log): (seconds, ru_maxrss KiB, rc)."""
    fa = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)]
    t0 = time.perf_counter()
    pid = RUNNING[0] = os.posix_spawnp(argv[0], argv, dict(E), file_actions=fa, setpgroup=0)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter()
    RUNNING[0] = None
    if os.WIFEXITED(status):
        rc = os.WEXITSTATUS(status)
    else:
        rc = 128 + os.WTERMSIG(status)
    return t1 - t0, ru.ru_maxrss, rc


def commands():
    p, k, f, e, g = E["CS_PARAES"], E["CS_KEY"], E["CS_F"], E["CS_E"], E["CS_G"]
    size, readers = int(E["CS_SIZE"]), int(E["CS_READERS"])
    threads = [int(t) for t in E["CS_THREADS"].split()]
    q = shlex.quote
    mib = 1 << 20
    per = -(-size // readers)
    per = -(-per // mib) * mib
    lines = ["set -e", "pids=()"]
    for i in range(readers):
        start = i * per
        if start >= size:
            break
        count = min(per, size - start)
        lines.append(f"dd if={q(f)} of=/dev/null bs=4M iflag=skip_bytes,count_bytes skip={start} count={count} status=none & pids+=($!)")
    lines.append('for pid in "${pids[@]}"; do wait "$pid"; done')
    dd_script = "\n".join(lines)
    sh = lambda s: ["bash", "-c", "set -o pipefail\n" + s]
    c = [
        ("cat f > /dev/null", ["cat", f], None, "cat"),
        (f"{readers} dd readers > /dev/null", sh(dd_script), None, "cat"),
        ("paraes enc -o /dev/null f", [p, "enc", "-q", "-k", k, "-o", "/dev/null", f], None, "cat"),
    ]
    c += [(f"paraes enc --threads {t} -o /dev/null", [p, "enc", "-q", "-k", k, "--threads", str(t), "-o", "/dev/null", f], None, "cat") for t in threads]
    c.append(("paraes dec -o /dev/null f.paraes", [p, "dec", "-q", "-k", k, "-o", "/dev/null", e], None, "cat"))
    c += [(f"paraes dec --threads {t} -o /dev/null", [p, "dec", "-q", "-k", k, "--threads", str(t), "-o", "/dev/null", e], None, "cat") for t in threads]
    c += [
        ("paraes verify f.paraes", [p, "verify", "-q", "-k", k, e], None, "cat"),
        ("paraes enc -o g f (tmpfs file)", [p, "enc", "-q", "-k", k, "-o", g, f], g, "cp"),
        ("cp f g", ["cp", f, g], g, "cp"),
        ("cat f | paraes enc > /dev/null", sh(f"cat {q(f)} | {q(p)} enc -q -k {q(k)} > /dev/null"), None, "cat|cat"),
        ("cat f | cat > /dev/null", sh(f"cat {q(f)} | cat > /dev/null"), None, "cat|cat"),
    ]
    return c


def files():
    rounds, budget = int(E["CS_ROUNDS"]), float(E["CS_BUDGET_S"])
    start = float(E["CS_START_EPOCH"])
    log = os.path.join(E["CS_WORK"], "stderr.log")
    cmds = commands()
    path = os.path.join(OUT, "files.csv")
    done, last, cut = 0, None, None
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["round", "position", "command", "seconds", "exit_status"])
        for r in range(1, rounds + 1):
            elapsed = time.time() - start
            if last is not None and elapsed + last > budget:
                cut = (f"ROUNDS CUT: only {done} of {rounds} rounds ran: {elapsed:.0f} s so far plus"
                       f" {last:.0f} s for a round would pass BUDGET_S={budget:.0f}")
                print(cut)
                break
            t_round = time.time()
            for pos, (name, argv, remove, _) in enumerate(cmds):
                if remove and os.path.exists(remove):
                    os.unlink(remove)
                open(log, "w").close()
                secs, rss, rc = spawn(argv, log)
                if rc != 0:
                    tail = (read(log) or "").strip().splitlines()[-5:]
                    die(f"round {r}: `{name}` exited with status {rc}: " + (" | ".join(tail) or "(nothing on stderr)")
                        + f" (the samples so far are in {path})")
                w.writerow([r, pos, name, f"{secs:.6f}", rc])
                fh.flush()
                if remove:
                    os.unlink(remove)
            done = r
            last = time.time() - t_round
            print(f"round {r} of {rounds}: {last:.1f} s")
    return cut


def gnu_time():
    """The GNU /usr/bin/time, if installed: its path and its own floor (KiB) for `true`."""
    t = "/usr/bin/time"
    if not os.access(t, os.X_OK):
        return None, None
    r = subprocess.run([t, "--version"], capture_output=True, text=True)
    if "GNU" not in r.stdout + r.stderr:
        return None, None
    out = os.path.join(E["CS_WORK"], "time.out")
    subprocess.run([t, "-f", "%M", "-o", out, "true"], check=True)
    return t, int(read(out).split()[-1])


def hwm_poll(argv, log):
    """Runs argv while reading VmHWM (KiB) from /proc every 2 ms: (the last value read, rc)."""
    fa = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)]
    pid = RUNNING[0] = os.posix_spawnp(argv[0], argv, dict(E), file_actions=fa, setpgroup=0)
    hwm = None
    while True:
        done, status, _ = os.wait4(pid, os.WNOHANG)
        if done:
            break
        for line in (read(f"/proc/{pid}/status") or "").splitlines():
            if line.startswith("VmHWM:"):
                hwm = max(hwm or 0, int(line.split()[1]))
        time.sleep(0.002)
    RUNNING[0] = None
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    return hwm, rc


def rss_pass():
    """Peak RSS (KiB) of each paraes command that runs on its own, once each, untimed."""
    how = E["CS_RSS"]
    if how == "none":
        return {}, "not measured (RSS=none)"
    t, floor = gnu_time() if how in ("auto", "time") else (None, None)
    if how == "time" and not t:
        die("RSS=time but GNU /usr/bin/time is not installed")
    if t:
        method = f"GNU /usr/bin/time %M (ru_maxrss); its floor, for `true`, is {floor / 1024:.1f} MiB"
    elif os.path.exists(f"/proc/{os.getpid()}/status"):
        method = "VmHWM from /proc/PID/status every 2 ms while it ran (a lower bound: growth in its last 2 ms is missed)"
    else:
        return {}, "not measured (neither GNU /usr/bin/time nor /proc)"
    log = os.path.join(E["CS_WORK"], "stderr.log")
    rss = {}
    for name, argv, remove, _ in commands():
        if argv[0] != E["CS_PARAES"]:
            continue
        if remove and os.path.exists(remove):
            os.unlink(remove)
        open(log, "w").close()
        if t:
            out = os.path.join(E["CS_WORK"], "time.out")
            _, _, rc = spawn([t, "-f", "%M", "-o", out] + argv, log)
            kib = int(read(out).split()[-1]) if rc == 0 else None
        else:
            kib, rc = hwm_poll(argv, log)
        if rc != 0:
            tail = (read(log) or "").strip().splitlines()[-5:]
            die(f"RSS pass: `{name}` exited with status {rc}: " + (" | ".join(tail) or "(nothing on stderr)"))
        if kib is None:
            die(f"RSS pass: no VmHWM read for `{name}` (it ended within 2 ms?)")
        rss[name] = kib
        if remove:
            os.unlink(remove)
    print(f"peak RSS pass done: {method}")
    return rss, method


def size_txt(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def fmt_s(s):
    return f"{s:.4f}" if s < 10 else f"{s:.2f}"


def report(cut, rss, rss_method):
    size = int(E["CS_SIZE"])
    cmds = commands()
    samples = {}
    with open(os.path.join(OUT, "files.csv")) as fh:
        for row in csv.DictReader(fh):
            samples.setdefault(row["command"], {"seconds": []})["seconds"].append(float(row["seconds"]))
    result_files = []
    medians = {name: statistics.median(samples[name]["seconds"]) for name, *_ in cmds if name in samples}
    ref_of = {"cat": "cat f > /dev/null", "cp": "cp f g", "cat|cat": "cat f | cat > /dev/null"}
    print()
    print(f"## Whole files: {size_txt(size)} ({size} bytes) in {E['CS_SHM']}, "
          f"{len(samples.get(cmds[0][0], {'seconds': []})['seconds'])} round(s), interleaved; seconds min / median / max")
    print()
    print("| command | min | median | max | GB/s (median) | median vs | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, argv, _, ref in cmds:
        if name not in samples:
            continue
        s = samples[name]["seconds"]
        med = medians[name]
        refname = ref_of[ref]
        vs = "-" if refname == name else f"{med / medians[refname]:.2f}x {ref}"
        kib = rss.get(name)
        rss_txt = f"{kib / 1024:.1f}" if kib is not None else "-"
        print(f"| `{name}` | {fmt_s(min(s))} | {fmt_s(med)} | {fmt_s(max(s))} | {size / med / 1e9:.2f} | {vs} | {rss_txt} |")
        result_files.append({"command": name, "argv": argv if argv[0] != "bash" else argv[2], "seconds": s,
                             "min": min(s), "median": med, "max": max(s), "gb_per_s_median": size / med / 1e9,
                             "reference": refname, "ratio_to_reference": med / medians[refname],
                             "peak_rss_kib": kib})
    print()
    print("GB/s: 10^9 bytes per second of the file's size. `median vs`: the median over the named reference's median.")
    print(f"Peak RSS: paraes commands only, one untimed run each after the rounds: {rss_method}.")
    if cut:
        print(cut)

    bench = []
    for run_t in [int(t) for t in E.get("CS_BENCH_TS", "").split()]:
        with open(os.path.join(OUT, f"bench-t{run_t}.json")) as fh:
            doc = json.load(fh)
        for row in doc["rows"]:
            if row["engine"] == "cpu":
                bench.append(dict(row, run_threads=run_t))
    if bench:
        ts = sorted({r["threads"] for r in bench})
        impls = sorted({r["implementation"] for r in bench})
        print()
        print(f"## In memory: paraes bench -b cpu -m ctr,gcm --bits 256, implementation {', '.join(impls)};"
              " GB/s of the median sample (speedup over the same run's one-thread row)")
        print()
        print("| mode | size | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in ts) + " |")
        print("|---|---:|" + "---:|" * len(ts))
        keys = sorted({(r["mode"], r["bytes"]) for r in bench})
        with open(os.path.join(OUT, "bench.csv"), "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["run_threads", "implementation", "mode", "bits", "bytes", "threads", "seconds",
                        "seconds_min", "seconds_max", "gb_per_s", "speedup"])
            for r in bench:
                w.writerow([r["run_threads"], r["implementation"], r["mode"], r["bits"], r["bytes"], r["threads"],
                            r["seconds"], r["seconds_min"], r["seconds_max"], r["gb_per_s"], r["speedup"]])
        for mode, nbytes in keys:
            cells = []
            for t in ts:
                rows = [r for r in bench if r["mode"] == mode and r["bytes"] == nbytes and r["threads"] == t]
                if not rows:
                    cells.append("-")
                elif t == 1:
                    g = sorted(r["gb_per_s"] for r in rows)
                    cells.append(f"{g[0]:.2f}" if len(g) == 1 else f"{statistics.median(g):.2f} ({g[0]:.2f}-{g[-1]:.2f}, {len(g)} runs)")
                else:
                    cells.append("; ".join(f"{r['gb_per_s']:.2f} ({r['speedup']:.2f}x)" for r in rows))
            print(f"| {mode} | {size_txt(nbytes)} | " + " | ".join(cells) + " |")
        print()
        print("The one-thread column: every run measures it again (its median over the runs, and their range).")

    loadavg_after = (read("/proc/loadavg") or "").split()[:3]
    with open(os.path.join(OUT, "machine.json")) as fh:
        mach = json.load(fh)
    mach["loadavg_after"] = loadavg_after
    doc = {
        "script": "scripts/cpu-scaling.sh",
        "date_start_epoch": int(E["CS_START_EPOCH"]),
        "wall_seconds": time.time() - float(E["CS_START_EPOCH"]),
        "paraes": {"binary": E["CS_PARAES"], "version": E["CS_VERSION"], "commit_embedded": E["CS_COMMIT_EMBEDDED"],
                   "commit_stated": E.get("CS_COMMIT_STATED") or None},
        "settings": {"size_bytes": size, "rounds": int(E["CS_ROUNDS"]), "threads": [int(t) for t in E["CS_THREADS"].split()],
                     "dd_readers": int(E["CS_READERS"]), "bench_sizes": E["CS_BENCH_SIZES"],
                     "bench_repeat": int(E["CS_BENCH_REPEAT"]), "budget_s": int(E["CS_BUDGET_S"]), "quick": E["CS_QUICK"] == "1"},
        "rounds_cut": cut,
        "peak_rss_method": rss_method,
        "machine": mach,
        "files": result_files,
        "bench": bench,
    }
    with open(os.path.join(OUT, "results.json"), "w") as fh:
        json.dump(doc, fh, indent=2)
    print()
    print(f"load average after: {' '.join(loadavg_after)}; wall time {doc['wall_seconds']:.0f} s")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "machine":
        machine()
    elif what == "commit":
        embedded, _ = commit()
        with open(os.path.join(E["CS_WORK"], "commit"), "w") as fh:
            fh.write(embedded)
    elif what == "measure":
        cut = files()
        report(cut, *rss_pass())
    else:
        die(f"helper: unknown step {what}")
PY

export CS_OUT=$out CS_SHM=$shm CS_WORK=$work CS_NPROC=$ncpu CS_PARAES=$paraes CS_KEY=$key
export CS_F=$work/f CS_E=$work/f.paraes CS_G=$work/g CS_SIZE=$size CS_READERS=$max_threads
export CS_THREADS="${threads[*]}" CS_ROUNDS=$rounds CS_BUDGET_S=$budget_s CS_START_EPOCH=$start_epoch
export CS_BENCH_SIZES=$bench_sizes CS_BENCH_REPEAT=$bench_repeat CS_QUICK=$quick CS_RSS=$rss_how

# ---- 1. the machine and the binary ----------------------------------------------------------
run_bg python3 "$helper" machine
CS_VERSION=$("$paraes" --version) || die "$paraes --version failed"
export CS_VERSION
say "paraes: $CS_VERSION"
stated=${COMMIT:-}
if [ -z "$stated" ] && [ -f "$(dirname "$paraes")/COMMIT" ]; then
  # The file's first word (stage-device.sh's COMMIT: "HASH DATE SUBJECT", then more lines).
  stated=$(awk 'NR == 1 { print $1 }' "$(dirname "$paraes")/COMMIT")
fi
export CS_COMMIT_STATED=$stated CS_PROBE=$work/probe.json
"$paraes" bench -b cpu -m ctr --bits 256 --sizes 4KiB --threads 1 --repeat 1 --baseline none \
  --json "$CS_PROBE" >/dev/null || die "paraes bench (a 4 KiB probe, for the embedded commit) failed"
run_bg python3 "$helper" commit
CS_COMMIT_EMBEDDED=$(cat "$work/commit")
export CS_COMMIT_EMBEDDED

# ---- 2. in memory: paraes bench --------------------------------------------------------------
if [ "$do_bench" = 1 ]; then
  bench_ts=()
  for t in "${threads[@]}"; do [ "$t" = 1 ] || bench_ts+=("$t"); done
  [ ${#bench_ts[@]} -gt 0 ] || bench_ts=(1)
  for t in "${bench_ts[@]}"; do
    say "bench: --threads $t ..."
    run_bg "$paraes" bench -b cpu -m ctr,gcm --bits 256 --sizes "$bench_sizes" --threads "$t" \
      --repeat "$bench_repeat" --baseline none --json "$out/bench-t$t.json" --csv "$out/bench-t$t.csv" \
      >"$out/bench-t$t.txt" || die "paraes bench --threads $t failed (its table so far: $out/bench-t$t.txt)"
  done
  export CS_BENCH_TS="${bench_ts[*]}"
else
  say "bench: skipped (BENCH=0)"
fi

# ---- 3. whole files in tmpfs -----------------------------------------------------------------
say "making f: $size bytes of AES-CTR keystream (paraes enc --raw ctr of zeros) in $work"
head -c "$size" /dev/zero | "$paraes" enc --raw ctr -q -k "$key" -o "$CS_F" 2>"$work/make.log" ||
  die "making the input failed: $(tail -n 3 "$work/make.log")"
[ "$(stat -c %s "$CS_F")" = "$size" ] || die "the input has $(stat -c %s "$CS_F") bytes, not $size"
"$paraes" enc -q -k "$key" -o "$CS_E" "$CS_F" || die "paraes enc of the input failed"
"$paraes" dec -q -k "$key" -o "$CS_G" "$CS_E" || die "paraes dec of its container failed"
cmp -s "$CS_F" "$CS_G" || die "paraes dec of the container differs from the input: no timing of a broken binary"
rm -f -- "$CS_G"
say "round trip checked (dec of enc = f); rounds start"
run_bg python3 "$helper" measure
say
say "raw output: $out (report.txt results.json files.csv machine.json bench*)"
