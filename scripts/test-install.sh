#!/usr/bin/env bash
# README's install for a site, as a new user runs it: `cargo install --locked --path .` (no
# features) into a fresh prefix, then README's quick start with the installed `paraes` on PATH
# instead of target/release/paraes (a 16 MiB file instead of 256 MiB). scripts/test.sh runs it;
# CI runs it on its own clean clone of main. It shares ./target with the other steps
# (--target-dir), so on a machine that built the release binary already it costs seconds, not
# a second build; a user's own `cargo install` builds in a temporary directory instead.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "NOTE: this checkout has uncommitted changes: the install below builds them, not HEAD"
fi
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

# The install line of README.md's "On a cluster" section, run as written (plus where to put it).
install=$(sed -n '/^## On a cluster/,/^## /p' README.md | grep -m1 '^cargo install ')
install=${install%%#*}  # the line's comment
install=${install%"${install##*[![:space:]]}"}
[ -n "$install" ] || { echo "README.md's On a cluster section has no 'cargo install' line" >&2; exit 1; }
case "$install" in
  *--features*) echo "README's first install line must be the plain one: $install" >&2; exit 1 ;;
esac
echo "+ $install --root <fresh prefix>"
$install --root "$prefix" --target-dir target --quiet

export PATH="$prefix/bin:$PATH"
[ "$(command -v paraes)" = "$prefix/bin/paraes" ] || { echo "installed paraes is not on PATH" >&2; exit 1; }
paraes --version

# README's quick start line with the installed binary.
quick=$(sed -n '/^## Quick start/,/^## /p' README.md | grep -m1 '^cargo build --release &&')
[ -n "$quick" ] || { echo "README.md's quick start line is missing" >&2; exit 1; }
quick=${quick/cargo build --release/true}
quick=${quick//target\/release\/paraes/paraes}
quick=${quick/head -c 256M/head -c 16M}
out=$(cd "$prefix" && bash -c "set -e; $quick"$'\necho "$demo"')
echo "$out"
grep -q '^round trip OK$' <<<"$out" || { echo "the quick start with the installed binary failed" >&2; exit 1; }
rm -r "$(tail -n1 <<<"$out")"
echo "installed paraes ran the quick start"
