#!/usr/bin/env bash
# Checks regenerate.sh's failure paths with stub tools (no SEAL, no cross-compiler, seconds):
#   1. a failed build of the KAT harness must not run the seal_kat left by an earlier build
#      (which would print "byte for byte the committed file" and exit 0);
#   2. a qemu-arm run that fails must not record the count file an earlier run left.
# Both must end the script with status 3 and say what failed.
#
# usage: tools/seal-harness/test_regenerate.sh     (exit 0: both hold)
# Licensed under the Apache License, Version 2.0.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
STUBS="$T/bin"
mkdir -p "$STUBS"
stub() { printf '#!/usr/bin/env bash\n%s\n' "$2" >"$STUBS/$1"; chmod +x "$STUBS/$1"; }
stub git 'if [ "${3:-}" = rev-parse ] || [ "${1:-}" = rev-parse ]; then echo 356f2e6dcc0520dc9fc14e98674d9a56cba6018c; fi'
# cmake: configure and install succeed, every --build fails (the harness source has an error)
stub cmake 'for a in "$@"; do [ "$a" = --build ] && { echo "cmake: build failed" >&2; exit 1; }; done; exit 0'
stub g++ 'exit 0'
stub arm-linux-gnueabihf-g++ 'exit 0'
stub cc 'exit 0'
stub qemu-arm 'echo "qemu-arm: cannot run" >&2; exit 1'

failures=0
check() {  # check NAME STATUS OUTPUT: status 3 and no claim of success
    local name="$1" status="$2" out="$3"
    if [ "$status" -ne 3 ] || grep -q "byte for byte\|every count equal" <<<"$out"; then
        echo "FAIL $name: status $status"; echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok   $name: status 3 ($(grep -m1 'regenerate.sh:' <<<"$out"))"
    fi
}

# 1. kat: an earlier build's seal_kat is still there and prints the committed file
W1="$T/w1"
mkdir -p "$W1/SEAL/.git" "$W1/native-install/lib" "$W1/native-harness"
: >"$W1/native-install/lib/libseal-4.4.a"
printf '#!/usr/bin/env bash\ncat "%s"\n' "$ROOT/crates/veil-he-taco/tests/data/seal_4.4.3_kat.json" >"$W1/native-harness/seal_kat"
chmod +x "$W1/native-harness/seal_kat"
out="$(PATH="$STUBS:$PATH" WORK="$W1" "$HERE/regenerate.sh" kat 2>&1)"
check "kat after a failed harness build" $? "$out"

# 2. armv7: the build stub succeeds here, qemu-arm fails; count.tmp holds an earlier run's numbers
stub cmake 'exit 0'
W2="$T/w2"
mkdir -p "$W2/SEAL/.git" "$W2/armv7-install/lib"
: >"$W2/armv7-install/lib/libseal-4.4.a"
echo "1 2 3 4 10" >"$W2/count.tmp"
out="$(PATH="$STUBS:$PATH" WORK="$W2" "$HERE/regenerate.sh" armv7 2>&1)"
status=$?
check "armv7 with qemu-arm failing" $status "$out"
if [ -f "$W2/armv7_counts.txt" ] && grep -q "1 2 3 4 10" "$W2/armv7_counts.txt"; then
    echo "FAIL armv7: an earlier run's count was recorded for a run that failed"
    failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] && echo "test_regenerate: both failure paths stop with status 3" || exit 1
