#!/usr/bin/env bash
# stage-device.sh: builds, HERE (no GPU needed), everything the GPU session runs there (the
# device machine has the NVIDIA driver but no Rust): the paraes binary, gpu_bench and the
# GPU test binaries, plus kb.py, the reference kernel, kernels/aes.* and device-run.sh, in
# one folder that runs on its own (`bash DIR/device-run.sh 1`), with a COMMIT file naming
# what it was built from.
#
# Usage (from the repository root): crates/paraes-gpu/scripts/stage-device.sh [DIR]
#   DIR defaults to .device-bin; it must be git-ignored to travel as a carried path:
#   `echo /.device-bin/ >> .git/info/exclude`. Then on the device, two calls of < 10 min:
#     bash .device-bin/device-run.sh 1    (probe, GPU tests, gpu_bench)
#     bash .device-bin/device-run.sh 2    (the paraes tool table, kb.py, Nsight Compute)
#   with carry [".device-bin"]; the files in $OUT go to docs/gpu-results/ unedited.
# Set CARGO_TARGET_DIR to build elsewhere than target/. The carried total must stay under
# 64 MiB with the working tree: each binary embeds the PTX and both cubins (~9.4 MB), so
# only the binaries the device run needs are copied, stripped, and the kernel images are not
# copied at all (the run finds them in the carried tree's kernels/; measured 2026-11-25:
# 42 MiB staged + 14 MiB tree; with the images copied too it was 66 MiB, over the limit).
# The script ends by checking that total.
set -euo pipefail
dir="${1:-.device-bin}"
target="${CARGO_TARGET_DIR:-target}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mkdir -p "$dir/kernels"
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
bins=("$dir/paraes" "$dir/gpu_bench" "$dir/gpu_identity" "$dir/no_gpu")
strip "${bins[@]}" 2>/dev/null || echo "stage-device: strip failed: the binaries stay unstripped (larger)" >&2
chmod +x "${bins[@]}"
cp "$here/kb.py" "$here/device-run.sh" "$dir/"
chmod +x "$dir/device-run.sh" "$dir/kb.py"
cp "$root"/kernels/aes.cu "$dir/kernels/"
{
    git -C "$root" log -1 --format='%H %cd %s' --date=iso
    if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
        echo "plus uncommitted changes to: $(git -C "$root" status --porcelain --untracked-files=no | awk '{print $2}' | tr '\n' ' ')"
    fi
    echo "staged $(date -u +%FT%TZ) on $(uname -n)"
} >"$dir/COMMIT"
anchor="$root/../shared/gpu-first-contact/anchor.ptx"
if [ -f "$anchor" ]; then cp "$anchor" "$dir/"; else echo "stage-device: no $anchor: kb.py will time ours only" >&2; fi
ls -la "$dir" "$dir/kernels"
du -sh "$dir"
cat "$dir/COMMIT"
# What a run carries: the staged folder plus the tracked tree (and untracked, unignored files).
staged=$(du -sb "$dir" | cut -f1)
tree=$(git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
total=$(( (staged + tree) / 1048576 ))
echo "stage-device: a run carries about $total MiB ($((staged / 1048576)) staged + $((tree / 1048576)) tree; the limit is 64)"
if [ "$total" -ge 63 ]; then
    echo "stage-device: ERROR: over the 64 MiB a device run may carry: drop a binary or shrink the tree" >&2
    exit 1
fi
