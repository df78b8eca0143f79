#!/usr/bin/env bash
# stage-device.sh: builds, HERE (no GPU needed), everything the GPU session runs there (the
# device machine has the NVIDIA driver but no Rust): the paraes binary, gpu_bench and the
# GPU test binaries, plus kb.py and the reference kernel, in one folder to carry.
#
# Usage (from the repository root): crates/paraes-gpu/scripts/stage-device.sh [DIR]
#   DIR defaults to .device-bin; it must be git-ignored to travel as a carried path:
#   `echo /.device-bin/ >> .git/info/exclude`. Then on the device, two calls of < 10 min:
#     bash crates/paraes-gpu/scripts/device-run.sh 1    (GPU tests, gpu_bench)
#     bash crates/paraes-gpu/scripts/device-run.sh 2    (the paraes tool table, kb.py, Nsight Compute)
#   with carry [".device-bin"]; the files in $OUT go to docs/gpu-results/ unedited.
# Set CARGO_TARGET_DIR to build elsewhere than target/. The carried total must stay under
# 64 MiB with the working tree: each binary embeds the PTX and both cubins (~7.3 MB), so
# only the binaries the device run needs are copied, stripped.
set -euo pipefail
dir="${1:-.device-bin}"
target="${CARGO_TARGET_DIR:-target}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$dir"
cargo build --release --bin paraes
cargo build --release -p paraes-gpu --example gpu_bench
cp "$target/release/paraes" "$target/release/examples/gpu_bench" "$dir/"
# The test binaries: cargo prints their paths as JSON; keep the ones that need a GPU.
cargo test --release -p paraes-gpu --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' |
    while read -r exe; do
        name="$(basename "$exe" | sed 's/-[0-9a-f]*$//')"
        case "$name" in
            gpu_identity | no_gpu) cp "$exe" "$dir/$name" ;;
        esac
    done
strip "$dir"/paraes "$dir"/gpu_bench "$dir"/gpu_identity "$dir"/no_gpu 2>/dev/null || true
cp "$here/kb.py" "$dir/"
anchor="$here/../../../../shared/gpu-first-contact/anchor.ptx"
if [ -f "$anchor" ]; then cp "$anchor" "$dir/"; else echo "stage-device: no $anchor: kb.py will time ours only" >&2; fi
ls -la "$dir"
du -sh "$dir"
