#!/usr/bin/env bash
# device-run.sh: the full measurements of paraes-gpu in two calls of < 10 minutes each, on the
# device machine (it has the driver, python3 and ncu, but no Rust): more than a 15-minute
# lease holds, so a lease runs device-session.sh instead, and these take a lease of their own.
# Runs from the repository root with the kit stage-device.sh packs, carried as .device-bin.tgz
# and unpacked first (`mkdir -p .device-bin && tar xzf .device-bin.tgz -C .device-bin &&`; it
# holds this script, the binaries, kb.py and kernels/aes.cu; the kernel images come from the
# tree's kernels/).
# Writes raw output to $OUT (at most 8 files per call), to be committed unedited under
# docs/gpu-results/.
#
#   bash .device-bin/device-run.sh 1   env.txt tests.log bench.txt bench.json dmon1.txt
#        environment; a probe that stops the call within seconds when the engine cannot
#        start; the GPU tests (every variant, sync mode, image; the no-GPU test on a GPU; the
#        8 GiB test last, with the time left); gpu_bench: correctness, image and JIT time,
#        kernel-only table of every variant, copies one way and both ways, in-memory end to
#        end, the engine A/B. About 4-6 minutes.
#   bash .device-bin/device-run.sh 2   tool.txt tool.json kb.txt ncu.txt dmon2.txt
#        the paraes tool 1 MiB..8 GiB on files in /dev/shm beside the CPU engine, and its
#        settings A/B (gpu_bench --tool-only; JSON saved after every row); kb.py (driver-API
#        timing of our cubin and of the reference kernel, same GPU); Nsight Compute on one
#        launch of each key kernel (skipped once 500 s have passed). About 5-8 minutes.
set -u
part="${1:-}"
case "$part" in
    1 | 2) ;;
    *) echo "usage: device-run.sh 1|2" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -x "$here/gpu_bench" ]; then B="$here"; else B=.device-bin; fi
O="${OUT:-/tmp/out}"
mkdir -p "$O"
T0=$SECONDS
# The GPU tests must run on the NVIDIA driver, never on the CPU stand-in of CI.
export PARAES_GPU_TESTS=nvidia
unset PARAES_CUDA_STANDIN
smi() { timeout 20 nvidia-smi "$@"; }

# 0. Within seconds: can the engine start at all? If not, say why and stop the call here.
{
    echo "== probe $(date +%T)"
    echo "staged: $B ($(cat "$B/COMMIT" 2>/dev/null || echo "no COMMIT file"))"
    echo "ldconfig -p | grep libcuda:"
    ldconfig -p 2>&1 | grep libcuda || echo "  (libcuda is not in the loader cache)"
    timeout 30 "$B/gpu_bench" --probe
    echo "-- probe rc=$?"
} >"$O/probe$part.txt" 2>&1
if ! grep -q "^-- probe rc=0" "$O/probe$part.txt"; then
    {
        echo "== the GPU engine cannot start: diagnostics"
        echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
        ls -la /usr/lib/x86_64-linux-gnu/libcuda* /usr/lib64/libcuda* /usr/local/nvidia/lib64/libcuda* 2>&1
        smi
        ls -la /dev/nvidia* 2>&1
        cat /proc/driver/nvidia/version 2>&1
    } >>"$O/probe$part.txt" 2>&1
    cat "$O/probe$part.txt"
    echo "device-run $part: STOPPED after $((SECONDS - T0)) s: the engine cannot start (see probe$part.txt)"
    exit 1
fi
cat "$O/probe$part.txt"

cc="$(smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)"
K="$B/kernels"
[ -f "$K/aes.ptx" ] || K=kernels
cubin="$K/aes.sm_${cc:-90}.cubin"
[ -f "$cubin" ] || cubin="$K/aes.ptx"
anchor="$B/anchor.ptx"
[ -f "$anchor" ] || anchor=-
timeout 600 nvidia-smi dmon -s pucvt -d 1 >"$O/dmon$part.txt" 2>&1 &
DMON=$!
trap 'kill $DMON 2>/dev/null' EXIT

if [ "$part" = 1 ]; then
    {
        date
        smi
        smi --query-gpu=name,compute_cap,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,clocks.max.sm,clocks.sm,power.limit,persistence_mode --format=csv
        smi topo -m
        echo "ldconfig -p | grep libcuda:"
        ldconfig -p | grep libcuda
        lscpu | grep -E 'Model name|^CPU\(s\)|NUMA|Flags' | cut -c1-300
        free -g
        df -h /dev/shm
        ldd --version | head -1
        uname -r
        command -v ncu nvcc python3
        echo "staged from commit: $(cat "$B/COMMIT" 2>/dev/null)"
        sha256sum "$K"/aes.* "$B"/paraes "$B"/gpu_bench "$B"/gpu_identity "$B"/no_gpu
    } >"$O/env.txt" 2>&1
    # 1. Correctness first: the 8 GiB test last, with what is left of a 200 s budget.
    {
        s=$SECONDS
        echo "== no_gpu $(date +%T)"
        timeout 30 "$B/no_gpu" --test-threads 1 2>&1
        echo "-- no_gpu rc=$? $((SECONDS - s)) s"
        s=$SECONDS
        echo "== gpu_identity (all but the 8 GiB test) $(date +%T)"
        timeout 170 "$B/gpu_identity" --test-threads 1 --skip eight_gib_in_one_call_matches 2>&1
        echo "-- gpu_identity rc=$? $((SECONDS - s)) s"
        left=$((200 - (SECONDS - T0)))
        if [ "$left" -ge 60 ]; then
            s=$SECONDS
            echo "== gpu_identity 8 GiB ($left s left) $(date +%T)"
            PARAES_GPU_BIG=1 timeout "$left" "$B/gpu_identity" --test-threads 1 --exact eight_gib_in_one_call_matches 2>&1
            echo "-- gpu_identity 8 GiB rc=$? $((SECONDS - s)) s"
        else
            echo "-- gpu_identity 8 GiB NOT RUN: only $left s left of the 200 s test budget"
        fi
    } >"$O/tests.log" 2>&1
    # 2. The benchmark (the tool table runs in call 2); the PTX comparison must JIT cold.
    CUDA_CACHE_DISABLE=1 timeout 330 "$B/gpu_bench" --json "$O/bench.json" --skip-tool \
        >"$O/bench.txt" 2>&1
    echo "gpu_bench rc=$? t=$((SECONDS - T0)) s" >>"$O/bench.txt"
    grep -E "SKIPPED|NOT RUN|FAILED|panicked|test result|rc=" "$O/tests.log"
    tail -n 40 "$O/bench.txt"
else
    # 3. The real tool end to end, files in /dev/shm, GPU beside CPU, round trips checked.
    timeout 240 "$B/gpu_bench" --tool-only --paraes "$B/paraes" --json "$O/tool.json" >"$O/tool.txt" 2>&1
    echo "gpu_bench --tool-only rc=$? t=$((SECONDS - T0)) s" >>"$O/tool.txt"
    # 4. Kernel-only through the driver API: our cubin vs the reference kernel, same GPU.
    timeout 150 python3 -u "$B/kb.py" "$cubin" "$anchor" >"$O/kb.txt" 2>&1
    echo "kb.py rc=$? t=$((SECONDS - T0)) s" >>"$O/kb.txt"
    # 5. What binds: one launch of each under Nsight Compute (skipped past 500 s).
    NCU=$(command -v ncu || compgen -G '/opt/nvidia/nsight-compute/*/ncu' | head -1)
    if [ -z "$NCU" ]; then
        echo "ncu not found: no Nsight Compute section" >"$O/ncu.txt"
    else
        for k in aes128_ctr_keystream aes128_ctr_fused aes128_ctr_keystream_pair_r1 aes128_ctr_fused_lb5 OneTblBytePermReuseUnroll; do
            [ $((SECONDS - T0)) -lt 500 ] || { echo "ncu: out of time before $k"; break; }
            [ "$k" != OneTblBytePermReuseUnroll ] || [ "$anchor" != - ] || continue
            echo "== ncu $k"
            timeout 90 "$NCU" --clock-control none -k "$k" --launch-skip 3 --launch-count 1 \
                --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section SchedulerStats \
                --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables \
                --metrics sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second \
                python3 -u "$B/kb.py" "$cubin" "$anchor" "$k"
            echo "-- ncu $k rc=$?"
        done >"$O/ncu.txt" 2>&1
    fi
    tail -n 20 "$O/tool.txt"
    grep -E "ours|anchor|load" "$O/kb.txt"
    grep -E "^ncu not found|^== |rc=|Throughput|Pipe|Registers|Achieved Occupancy" "$O/ncu.txt" | head -60
fi
echo "device-run $part: $((SECONDS - T0)) s, files in $O:"
ls -la "$O"
