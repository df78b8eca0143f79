#!/usr/bin/env bash
# stage-device.sh: builds, HERE (no GPU needed), everything a device session runs there (the
# device machine has the NVIDIA driver but no Rust): the paraes binary, gpu_bench and the GPU
# test binaries, the Python package's wheel, plus device-session.sh, device-python.py,
# device-run.sh, kb.py, the reference kernel and kernels/aes.cu, in one folder that runs on its own, with a COMMIT file naming what it was
# built from; then packs the folder into DIR.tgz, the one thing a device call carries.
#
# Usage (from the repository root): crates/paraes-gpu/scripts/stage-device.sh [DIR]
#   DIR defaults to .device-bin (DIR and DIR.tgz must be git-ignored: .gitignore has the
#   default's). A lease is 15 device-minutes, its start included, so the plan is ONE call:
#     mkdir -p .device-bin && tar xzf .device-bin.tgz -C .device-bin &&
#       bash .device-bin/device-session.sh
#   with carry [".device-bin.tgz"] and timeout_s 600 (issues 38 and 37; the script's header
#   lists its files). The older, longer runs (`device-run.sh 1` and `2`, about 5-8 minutes
#   each) need a lease of their own. The files in $OUT go to docs/gpu-results/ unedited.
# Set CARGO_TARGET_DIR to build elsewhere than target/. The carried total must stay under
# 64 MiB with the working tree: each binary embeds the PTX and both cubins (~13 MB), so only
# the binaries a run needs are copied, stripped, and packed (2026-11-29: eight binaries and the
# wheel, about 100 MiB unpacked, 31 MiB packed; unpacked, four binaries and the tree already passed the
# limit). The kernel images are not copied (the runs find them in the carried tree's
# kernels/). The script ends by checking that total.
set -euo pipefail
dir="${1:-.device-bin}"
target="${CARGO_TARGET_DIR:-target}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mkdir -p "$dir/kernels"
# The commit the binaries are built from; checked again at the end (a commit made while this
# runs would leave binaries that COMMIT misnames, and cpu-scaling.sh would refuse them).
head_at_start=$(git -C "$root" rev-parse HEAD)
cargo build --release --bin paraes
cargo build --release -p paraes-gpu --example gpu_bench
cp "$target/release/paraes" "$target/release/examples/gpu_bench" "$dir/"
# The test binaries: cargo prints their paths as JSON; keep the ones that need a GPU.
cargo test --release -p paraes-gpu --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' |
    while read -r exe; do
        name="$(basename "$exe" | sed 's/-[0-9a-f]*$//')"
        case "$name" in
            gpu_identity | no_gpu | gcm_records_engine | device_memory | container_files | wycheproof)
                cp "$exe" "$dir/$name" ;;
        esac
    done
bins=("$dir/paraes" "$dir/gpu_bench" "$dir/gpu_identity" "$dir/no_gpu" "$dir/gcm_records_engine"
    "$dir/device_memory" "$dir/container_files" "$dir/wycheproof")
strip "${bins[@]}" 2>/dev/null || echo "stage-device: strip failed: the binaries stay unstripped (larger)" >&2
chmod +x "${bins[@]}"
cp "$here/kb.py" "$here/device-run.sh" "$here/device-session.sh" "$here/device-python.py" "$dir/"
chmod +x "$dir/device-run.sh" "$dir/device-session.sh" "$dir/kb.py"
# The Python package as a wheel (abi3, CPython 3.11+; the device's python3 holds PyTorch), for
# device-python.py: built by pip through maturin, as README's `pip install` builds it.
py="$root/target/py-venv/bin/python"
[ -x "$py" ] || py=python3
rm -f "$dir"/paraes-*.whl
if "$py" -m pip wheel -q --no-deps -w "$dir" "$root/crates/paraes-py"; then
    ls -la "$dir"/paraes-*.whl
else
    echo "stage-device: the wheel did not build: the device's Python step will say so" >&2
fi
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
if [ "$(git -C "$root" rev-parse HEAD)" != "$head_at_start" ]; then
    echo "stage-device: ERROR: HEAD moved from $head_at_start while staging: stage again" >&2
    exit 1
fi
# What a run carries: the staged folder packed (the binaries each embed the kernel images, so
# they compress about 4x; unpacked they passed the 64 MiB limit once there were seven) plus the
# tracked tree (and untracked, unignored files).
tgz="$dir.tgz"
tar czf "$tgz" -C "$dir" .
packed=$(stat -c %s "$tgz")
tree=$(git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
total=$(( (packed + tree) / 1048576 ))
echo "stage-device: a run carries about $total MiB ($((packed / 1048576)) packed in $tgz + $((tree / 1048576)) tree; the limit is 64)"
if [ "$total" -ge 63 ]; then
    echo "stage-device: ERROR: over the 64 MiB a device run may carry: drop a binary or shrink the tree" >&2
    exit 1
fi
if git -C "$root" check-ignore -q "$tgz" && git -C "$root" check-ignore -q "$dir"; then :; else
    echo "stage-device: ERROR: $dir and $tgz must be git-ignored (.gitignore has /.device-bin/ and /.device-bin.tgz)" >&2
    exit 1
fi
echo "stage-device: the one call of a 15-minute lease (docs/GPU.md, \"Running the benchmark on the device\"):"
echo "  run(command: \"mkdir -p $(basename "$dir") && tar xzf $(basename "$tgz") -C $(basename "$dir") && bash $(basename "$dir")/device-session.sh\","
echo "      carry: [\"$(basename "$tgz")\"], timeout_s: 600)"
