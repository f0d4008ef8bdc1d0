# Sourced by the bench scripts that time amp-run beside PyTorch: the
# repository root, this build's amp-run, bench/results, the pinned
# interpreter (scripts/setup.sh equips it) and a scratch directory removed
# at exit ($work).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
run="$root/build/bin/amp-run"
out="$root/bench/results"
mkdir -p "$out"
[ -x "$run" ] || { echo "build first: scripts/test.sh or ninja -C build" >&2; exit 1; }
"$root/scripts/setup.sh" > /dev/null
python=$("$root/scripts/setup.sh" --print-python)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
