#!/usr/bin/env bash
# stage-device.sh: builds the GPU benchmark and the GPU test binaries here (the device
# machine has the NVIDIA driver but no Rust) and copies them into one folder to carry there.
#
# Usage (from the repository root): crates/paraes-gpu/scripts/stage-device.sh [DIR]
#   DIR defaults to .device-bin; it must be git-ignored to travel as a carried path, e.g.
#   `echo /.device-bin/ >> .git/info/exclude`. Then, on the device:
#   .device-bin/run-on-device.sh        (tests, then the benchmark; JSON and logs to $OUT)
set -euo pipefail
dir="${1:-.device-bin}"
mkdir -p "$dir"
cargo build --release -p paraes-gpu --example gpu_bench
cp target/release/examples/gpu_bench "$dir/"
# The test binaries: cargo prints their paths as JSON; take the executables.
cargo test --release -p paraes-gpu --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' |
    while read -r exe; do
        cp "$exe" "$dir/$(basename "$exe" | sed 's/-[0-9a-f]*$//')"
    done
cat >"$dir/run-on-device.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the device machine: GPU tests first (their output shows SKIPPED if no GPU was
# found), then the benchmark. Everything lands in $OUT (or ./device-out).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-./device-out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.max.sm --format=csv | tee "$out/nvidia-smi.txt"
status=0
for t in gpu_identity no_gpu ptx; do
    [ -x "$here/$t" ] || continue
    echo "== test $t" | tee -a "$out/tests.log"
    "$here/$t" --test-threads 1 2>&1 | tee -a "$out/tests.log" || status=1
done
echo "== gpu_bench"
"$here/gpu_bench" --json "$out/gpu_bench.json" 2>&1 | tee "$out/gpu_bench.txt" || status=1
exit $status
RUN
chmod +x "$dir/run-on-device.sh"
ls -la "$dir"
