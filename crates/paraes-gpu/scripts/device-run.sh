#!/usr/bin/env bash
# device-run.sh: the GPU session's measurements of paraes-gpu in two calls of < 10 minutes
# each, run on the device machine from the repository root with .device-bin/ carried (made
# here by stage-device.sh; the device has the driver, python3 and ncu, but no Rust).
# Adapted from ../shared/gpu-first-contact/device-run.sh. Writes raw output to $OUT (at most
# 8 files per call), to be committed unedited under docs/gpu-results/.
#
#   bash crates/paraes-gpu/scripts/device-run.sh 1   env.txt tests.log bench.txt bench.json dmon1.txt
#        environment; the GPU tests (every variant, sync mode, image; 8 GiB; the no-GPU test
#        on a GPU); gpu_bench: correctness, image and JIT time, kernel-only table of every
#        variant, copies one way and both ways, in-memory end to end, the engine A/B.
#        About 4-6 minutes.
#   bash crates/paraes-gpu/scripts/device-run.sh 2   tool.txt tool.json kb.txt ncu.txt dmon2.txt
#        the paraes tool 1 MiB..8 GiB on files in /dev/shm beside the CPU engine, and its
#        settings A/B (gpu_bench --tool-only); kb.py (driver-API timing of our cubin and of
#        the reference kernel, same GPU); Nsight Compute on one launch of each key kernel
#        (skipped once 500 s have passed). About 5-8 minutes.
set -u
part="${1:?usage: device-run.sh 1|2}"
B=.device-bin
O="${OUT:-/tmp/out}"
mkdir -p "$O"
T0=$SECONDS
cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)"
cubin="kernels/aes.sm_${cc:-90}.cubin"
[ -f "$cubin" ] || cubin=kernels/aes.ptx
anchor="$B/anchor.ptx"
[ -f "$anchor" ] || anchor=-
nvidia-smi dmon -s pucvt -d 1 >"$O/dmon$part.txt" 2>&1 &
DMON=$!
trap 'kill $DMON 2>/dev/null' EXIT

if [ "$part" = 1 ]; then
    {
        date
        nvidia-smi
        nvidia-smi --query-gpu=name,compute_cap,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,clocks.max.sm,clocks.sm,power.limit,persistence_mode --format=csv
        nvidia-smi topo -m
        lscpu | grep -E 'Model name|^CPU\(s\)|NUMA|Flags' | cut -c1-300
        free -g
        df -h /dev/shm
        ldd --version | head -1
        uname -r
        command -v ncu nvcc python3
        git log --oneline -1
        sha256sum kernels/aes.ptx kernels/aes.sm_80.cubin kernels/aes.sm_90.cubin "$B"/*
    } >"$O/env.txt" 2>&1
    # 1. Correctness first (the GPU tests print SKIPPED if they found no GPU: grep for it).
    {
        for t in no_gpu gpu_identity; do
            echo "== $t $(date +%T)"
            s=$SECONDS
            PARAES_GPU_BIG=1 timeout "$([ $t = no_gpu ] && echo 30 || echo 200)" "$B/$t" --test-threads 1 2>&1
            echo "-- $t rc=$? $((SECONDS - s)) s"
        done
    } >"$O/tests.log" 2>&1
    # 2. The benchmark (the tool table runs in call 2); the PTX comparison must JIT cold.
    CUDA_CACHE_DISABLE=1 timeout 330 "$B/gpu_bench" --json "$O/bench.json" --skip-tool \
        >"$O/bench.txt" 2>&1
    echo "gpu_bench rc=$? t=$((SECONDS - T0)) s" >>"$O/bench.txt"
    grep -E "SKIPPED|FAILED|panicked|test result|rc=" "$O/tests.log"
    tail -n 40 "$O/bench.txt"
elif [ "$part" = 2 ]; then
    # 3. The real tool end to end, files in /dev/shm, GPU beside CPU, round trips checked.
    timeout 240 "$B/gpu_bench" --tool-only --paraes "$B/paraes" --json "$O/tool.json" >"$O/tool.txt" 2>&1
    echo "gpu_bench --tool-only rc=$? t=$((SECONDS - T0)) s" >>"$O/tool.txt"
    # 4. Kernel-only through the driver API: our cubin vs the reference kernel, same GPU.
    timeout 150 python3 "$B/kb.py" "$cubin" "$anchor" >"$O/kb.txt" 2>&1
    echo "kb.py rc=$? t=$((SECONDS - T0)) s" >>"$O/kb.txt"
    # 5. What binds: one launch of each under Nsight Compute (skipped past 500 s).
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    for k in aes128_ctr_keystream aes128_ctr_fused aes128_ctr_keystream_pair_r1 aes128_ctr_fused_lb5 OneTblBytePermReuseUnroll; do
        [ $((SECONDS - T0)) -lt 500 ] || { echo "ncu: out of time before $k"; break; }
        [ "$k" != OneTblBytePermReuseUnroll ] || [ "$anchor" != - ] || continue
        echo "== ncu $k"
        timeout 90 "$NCU" --clock-control none -k "$k" --launch-skip 3 --launch-count 1 \
            --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section SchedulerStats \
            --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables \
            --metrics sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second \
            python3 "$B/kb.py" "$cubin" "$anchor" "$k"
        echo "-- ncu $k rc=$?"
    done >"$O/ncu.txt" 2>&1
    tail -n 20 "$O/tool.txt"
    grep -E "ours|anchor|load" "$O/kb.txt"
    grep -E "^== |rc=|Throughput|Pipe|Registers|Achieved Occupancy" "$O/ncu.txt" | head -60
else
    echo "usage: device-run.sh 1|2" >&2
    exit 2
fi
echo "device-run $part: $((SECONDS - T0)) s, files in $O:"
ls -la "$O"
