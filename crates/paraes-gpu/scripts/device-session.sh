#!/usr/bin/env bash
# device-session.sh: what a device lease of 15 minutes should measure, in ONE call of at most
# 9.5 minutes (the machine's start takes 1-2 of the 15, and a second call may have to pay it
# again): issue 38's GPU targets first, then issue 37's many-core CPU figures on the device's
# host. Runs from the repository root, from the kit stage-device.sh packs:
#
#   run(command: "mkdir -p .device-bin && tar xzf .device-bin.tgz -C .device-bin &&
#                 bash .device-bin/device-session.sh",
#       carry: [".device-bin.tgz"], timeout_s: 600)
#
# Writes 8 files to $OUT (a call returns at most 8), to be committed unedited under
# docs/gpu-results/DATE-KIND/session/:
#   env.txt          the probe (when the GPU engine cannot start, the GPU steps are skipped and
#                    said so, and the CPU step still runs), GPU, driver, PCIe, host CPU, memory,
#                    the staged commit, hashes of the binaries
#   tests.log        the GPU test binaries on the NVIDIA driver (PARAES_GPU_TESTS=nvidia, never
#                    the stand-in): no_gpu, the records engine, device memory, container files,
#                    the C2SP/Wycheproof Cobblestone vectors on the GPU engine first; gpu_identity (all but its 8 GiB test) after the figures, with the
#                    time then left
#   cobblestone.txt  gpu_bench --cobblestone: the copies; the records kernels (rows
#   cobblestone.json cobblestone{128,256}_{seal,open}, ghash_only, aes_ctr_only; 1 GiB, median
#                    of 20); the v3 body end to end against the copies both ways; a 16 GiB
#                    container loaded into device memory beside decryption turned off
#   tool.txt         the paraes tool on v3 files in /dev/shm, 256 MiB and 4 GiB: enc and dec with
#                    --backend cpu, gpu and hybrid, 3 rounds each (min/median/max seconds), every
#                    container opened by the CPU engine and compared with the input
#   cpu-scaling.tgz  scripts/cpu-scaling.sh's output folder (report.txt, results.json, ...;
#                    issue 37: bench at 1..N threads, 4 GiB files, the parallel read bound)
#   python.txt       device-python.py: paraes.cuda with PyTorch (README's PyTorch and
#                    safetensors examples as written, dtypes and both protocols, in place,
#                    tampering, non-contiguous refused, save, a 2 GiB load timed)
#   dmon.txt         nvidia-smi dmon for the whole call (the SM clock under load)
# and compute-sanitizer memcheck and racecheck on the records engine's tests, appended to
# tests.log (the last step).
# Every step runs under a timeout drawn from one deadline (DEADLINE_S, 560 s from the start):
# its cap, or less where the steps after it need their reserve (from the benchmark on, each
# reserve is at least the next step's cap and reserve; gpu_identity and compute-sanitizer take
# what is left), so the call ends before the tool's 600 s even when a step hangs, says what it
# cut, and a slow early step cannot starve the figures after it.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
B="$here"
O="${OUT:-/tmp/out}"
mkdir -p "$O"
T0=$SECONDS
deadline=${DEADLINE_S:-560}
# The GPU tests run on the NVIDIA driver, never on CI's CPU stand-in. A dry run of this script
# on a machine with no GPU: SESSION_STANDIN=1 keeps the stand-in (PARAES_CUDA_STANDIN), and
# SESSION_TOY=1 shrinks every size (its figures mean nothing; it checks the script runs).
bench_sizes=()
tool_sizes="256M 4G"
if [ "${SESSION_STANDIN:-0}" = 1 ]; then
    export PARAES_GPU_TESTS=standin
else
    export PARAES_GPU_TESTS=nvidia
    unset PARAES_CUDA_STANDIN
fi
if [ "${SESSION_TOY:-0}" = 1 ]; then
    bench_sizes=(--quick --reps 2 --kernel-bytes 1048576 --load-bytes 3000000)
    tool_sizes="1M 3M"
    export QUICK=1 SIZE=64M BENCH_SIZES=1MiB
fi
shm=/dev/shm/paraes-session
rm -rf "$shm"
mkdir -p "$shm"
DMON=
trap 'rm -rf "$shm"; [ -z "$DMON" ] || kill "$DMON" 2>/dev/null' EXIT

# Seconds a step may take: its cap, or what is left before the deadline less `reserve` (the
# later steps' floor), whichever is less; 0 when nothing is left.
budget() {
    local cap=$1 reserve=${2:-0} left
    left=$((deadline - (SECONDS - T0) - reserve))
    [ "$left" -gt 0 ] || left=0
    echo $((cap < left ? cap : left))
}
# Runs a command under `budget CAP RESERVE`, saying how long it took and its status; a step
# with no time left is skipped loudly.
step() {
    local name=$1 cap=$2 reserve=$3 t s rc
    shift 3
    t=$(budget "$cap" "$reserve")
    if [ "$t" -lt 5 ]; then
        echo "-- $name NOT RUN: out of time ($((SECONDS - T0)) s of $deadline used)"
        return 0
    fi
    echo "== $name (up to $t s) $(date +%T)"
    s=$SECONDS
    timeout -k 5 "$t" "$@" 2>&1
    rc=$?
    echo  # a command's last line may not end in a newline: the status starts a line of its own
    case $rc in
        124 | 137) echo "-- $name rc=$rc $((SECONDS - s)) s (CUT by its timeout)" ;;
        *) echo "-- $name rc=$rc $((SECONDS - s)) s" ;;
    esac
}

timeout 600 nvidia-smi dmon -s pucvt -d 1 >"$O/dmon.txt" 2>&1 &
DMON=$!

# ---- the machine, and can the GPU engine start at all? -------------------------------------
{
    echo "== probe $(date +%T)"
    echo "staged: $(cat "$B/COMMIT" 2>/dev/null || echo "no COMMIT file")"
    ldconfig -p 2>&1 | grep libcuda || echo "(libcuda is not in the loader cache)"
    timeout 30 "$B/gpu_bench" --probe
    echo "-- probe rc=$?"
    timeout 20 nvidia-smi --query-gpu=name,compute_cap,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.max.sm,power.limit --format=csv
    lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(|Flags' | cut -c1-400
    free -g
    df -h /dev/shm
    uname -r
    ldd --version | head -1
    command -v compute-sanitizer ncu python3
    sha256sum "$B"/paraes "$B"/gpu_bench "$B"/gpu_identity "$B"/gcm_records_engine
} >"$O/env.txt" 2>&1
gpu=1
grep -q "^-- probe rc=0" "$O/env.txt" || gpu=0
grep -E '^(device|driver|kernels|engine|probe|-- probe)' "$O/env.txt"

# ---- issue 38: correctness on the driver first, then the figures ---------------------------
if [ "$gpu" = 1 ]; then
    {
        step no_gpu 20 440 "$B/no_gpu" --test-threads 1
        step gcm_records_engine 30 440 "$B/gcm_records_engine" --test-threads 1
        step device_memory 30 440 "$B/device_memory" --test-threads 1
        step container_files 30 440 "$B/container_files" --test-threads 1
        step "wycheproof (the C2SP vectors on the GPU engine)" 60 420 "$B/wycheproof" --test-threads 1
    } >"$O/tests.log"
    grep -E "^(==|--)|test result|FAILED|panicked" "$O/tests.log"

    step "gpu_bench --cobblestone" 120 300 "$B/gpu_bench" --cobblestone "${bench_sizes[@]}" \
        --shm "$shm" --json "$O/cobblestone.json" >"$O/cobblestone.txt"
    rm -f "$shm"/gpu_bench-load-*
    tail -n 32 "$O/cobblestone.txt"
else
    echo "the GPU engine cannot start (env.txt): the GPU steps are NOT RUN" | tee "$O/tests.log" \
        "$O/cobblestone.txt" >/dev/null
fi

# ---- the tool on v3 files: cpu, gpu and hybrid, enc and dec, round trips checked ------------
tool_table() {
    local P="$B/paraes" K="$shm/key" size b r f s ok failed
    "$P" keygen -o "$K" || return 1
    for size in $tool_sizes; do
        f="$shm/f"
        head -c "$size" /dev/zero | "$P" enc --raw ctr -q -k "$K" -o "$f" 2>"$shm/ks.err" ||
            { echo "making the input FAILED: $(tail -n 3 "$shm/ks.err")"; return 1; }
        echo "== $size: $(stat -c %s "$f") bytes of AES-CTR keystream"
        for b in cpu gpu hybrid; do
            local enc=() dec=()
            failed=0
            for r in 1 2 3; do
                rm -f "$shm/c.$b" "$shm/p.$b"
                s=$EPOCHREALTIME
                "$P" enc -q -b "$b" -k "$K" -o "$shm/c.$b" "$f" || { failed=1; echo "enc -b $b FAILED"; break; }
                enc+=("$(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $s }")")
                s=$EPOCHREALTIME
                "$P" dec -q -b "$b" -k "$K" -o "$shm/p.$b" "$shm/c.$b" || { failed=1; echo "dec -b $b FAILED"; break; }
                dec+=("$(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $s }")")
            done
            ok="ROUND TRIP FAILED"
            if [ "$failed" = 0 ] && "$P" dec -q -b cpu -k "$K" -o "$shm/check" "$shm/c.$b" &&
                cmp -s "$shm/check" "$f" && cmp -s "$shm/p.$b" "$f"; then
                ok="round trip ok (its containers open on the CPU engine)"
            fi
            printf '%-7s enc %s| dec %s| %s\n' "$b" "$(printf '%s\n' "${enc[@]}" | sort -n | tr '\n' ' ')" \
                "$(printf '%s\n' "${dec[@]}" | sort -n | tr '\n' ' ')" "$ok"
            rm -f "$shm/c.$b" "$shm/p.$b" "$shm/check"
        done
        rm -f "$f"
    done
    echo "(seconds, 3 rounds each, sorted: min median max; files in /dev/shm; default chunk size)"
}
if [ "$gpu" = 1 ]; then
    export -f tool_table
    export B shm tool_sizes
    step "the tool: enc/dec -b cpu|gpu|hybrid" 70 230 bash -c tool_table >"$O/tool.txt"
    rm -f "$shm"/f "$shm"/c.* "$shm"/p.* "$shm"/check
    cat "$O/tool.txt"
fi

# ---- paraes.cuda from Python with PyTorch (the wheel staged beside this script) -------------
if [ "$gpu" = 1 ]; then
    {
        wheel=$(ls "$B"/paraes-*.whl 2>/dev/null | head -1)
        if [ -z "$wheel" ]; then
            echo "no wheel in the kit: the Python step is NOT RUN"
        elif timeout 60 python3 -m pip install -q --no-index --no-deps \
            --disable-pip-version-check --no-compile --target "$shm/py" "$wheel"; then
            step "device-python.py (PyTorch)" 60 170 \
                env PYTHONPATH="$shm/py${PYTHONPATH:+:$PYTHONPATH}" python3 -u \
                "$B/device-python.py" "$shm"
        else
            echo "pip install --target of $wheel FAILED: the Python step is NOT RUN"
        fi
    } >"$O/python.txt" 2>&1
    rm -rf "$shm"/paraes-py-*
    grep -E "^(==|--|FAIL)|time:|failure|Traceback|Error" "$O/python.txt"
fi

# ---- issue 37: the many-core CPU figures (no GPU needed) -----------------------------------
# BUDGET_S stops new rounds; the peak-RSS pass after them needs the rest of the step.
t=$(budget 150 20)
[ "$t" -ge 60 ] || t=60
cs_budget=$((t - 40))
echo "== cpu-scaling (BUDGET_S $cs_budget, up to $t s) $(date +%T)"
OUT="$shm/cpu-scaling" BUDGET_S=$cs_budget timeout -k 5 "$t" \
    bash scripts/cpu-scaling.sh "$B/paraes" >"$shm/cpu-scaling.log" 2>&1
echo "-- cpu-scaling rc=$?"
mkdir -p "$shm/cpu-scaling"
cp "$shm/cpu-scaling.log" "$shm/cpu-scaling/console.log"
tar czf "$O/cpu-scaling.tgz" -C "$shm" cpu-scaling
tail -n 25 "$shm/cpu-scaling.log"

# ---- with the time left: gpu_identity's newest test (the rest passed on an H200 on
# 2026-11-26 and takes 150 s), then compute-sanitizer on the records kernels (it refused the
# device once, 2026-11-04)
if [ "$gpu" = 1 ]; then
    step "gpu_identity (its newest test, the GCM chunks)" 30 10 "$B/gpu_identity" \
        --test-threads 1 --exact many_gcm_chunks_in_one_call_match >>"$O/tests.log"
    grep -E "^(==|--) gpu_identity|test result" "$O/tests.log" | tail -n 3
    CS=$(command -v compute-sanitizer || compgen -G '/usr/local/cuda*/bin/compute-sanitizer' | head -1)
    if [ -z "$CS" ]; then
        echo "compute-sanitizer not found" >>"$O/tests.log"
    else
        {
            for tool in memcheck racecheck; do
                reserve=0
                [ "$tool" = racecheck ] || reserve=10
                step "compute-sanitizer --tool $tool" 10 "$reserve" "$CS" --tool "$tool" --error-exitcode 3 \
                    "$B/gcm_records_engine" --test-threads 1 records_match_the_cpu_engine
            done
        } >>"$O/tests.log"
    fi
    grep -E "^(==|--) compute-sanitizer|ERROR SUMMARY|RACECHECK SUMMARY" "$O/tests.log"
fi
echo "device-session: done in $((SECONDS - T0)) s; files in $O: $(ls "$O" | tr '\n' ' ')"
