#!/usr/bin/env bash
# Regenerates Veil's SEAL-derived data from SEAL v4.4.3 source and compares it with the
# committed copies:
#   kat    crates/veil-he-taco/tests/data/seal_4.4.3_kat.json  (native build; byte for byte)
#   armv7  the instruction counts in python/veil/he/taco/armv7.py (ARMv7 cross-build, counted
#          under qemu-arm with insn_count.c; every number of COUNTS compared)
#
# usage: tools/seal-harness/regenerate.sh [kat|armv7|all]      (default: all)
# environment:
#   WORK          build folder, reused between runs (default: tools/seal-harness/work, ignored by git)
#   SEAL_GIT_URL  where to clone SEAL from (default: https://github.com/microsoft/SEAL.git; a
#                 local mirror works)
#   JOBS          parallel compile jobs (default: 2)
# needs: git, cmake >= 3.13, g++ (GCC 12.2 made the committed data); for armv7 also
# arm-linux-gnueabihf-g++ (Debian's gcc-arm-linux-gnueabihf 12.2), qemu-arm built with plugin
# support (Debian's qemu-user 7.2), a host cc.
# Exit status: 0 all requested data reproduced, 1 a difference, 2 a missing tool, 3 a build or run
# step failed (its log named). The targets run as `kat || status=1`, where bash ignores set -e, so
# every step that can fail says so itself (`|| fail`): a failed build must not run the binary an
# earlier build left, nor a failed qemu run record the count file an earlier run left
# (test_regenerate.sh checks both).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WHAT="${1:-all}"
WORK="${WORK:-$HERE/work}"
SEAL_GIT_URL="${SEAL_GIT_URL:-https://github.com/microsoft/SEAL.git}"
SEAL_TAG=v4.4.3
SEAL_COMMIT=356f2e6dcc0520dc9fc14e98674d9a56cba6018c
JOBS="${JOBS:-2}"
KAT_COMMITTED="$ROOT/crates/veil-he-taco/tests/data/seal_4.4.3_kat.json"
ARMV7_COMMITTED="$ROOT/python/veil/he/taco/armv7.py"
SEAL_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DSEAL_BUILD_DEPS=OFF -DSEAL_USE_MSGSL=OFF -DSEAL_USE_ZLIB=OFF
            -DSEAL_USE_ZSTD=OFF -DSEAL_USE_INTEL_HEXL=OFF -DBUILD_SHARED_LIBS=OFF -DSEAL_BUILD_TESTS=OFF
            -DSEAL_BUILD_EXAMPLES=OFF -DSEAL_BUILD_BENCH=OFF)
# the parameter sets of armv7.py: N and coefficient-modulus bits
ARMV7_SETS=("4096 36,36,37" "8192 43,43,44" "8192 43,43,44,44,44" "16384 48,48,48,49,49,49,49,49,49")

case "$WHAT" in kat|armv7|all) ;; *) echo "regenerate.sh: unknown target '$WHAT' (kat, armv7 or all)" >&2; exit 2 ;; esac

fail() {
    echo "regenerate.sh: $*" >&2
    exit 3
}

need() {
    for t in "$@"; do
        command -v "$t" >/dev/null || { echo "regenerate.sh: '$t' not found (needed for $WHAT)" >&2; exit 2; }
    done
}

fetch_seal() {
    need git cmake
    if [ ! -d "$WORK/SEAL/.git" ]; then
        mkdir -p "$WORK"
        git -c advice.detachedHead=false clone --quiet --branch "$SEAL_TAG" --depth 1 "$SEAL_GIT_URL" "$WORK/SEAL"
    fi
    local got
    got="$(git -C "$WORK/SEAL" rev-parse HEAD)"
    if [ "$got" != "$SEAL_COMMIT" ]; then
        echo "regenerate.sh: $WORK/SEAL is at $got, not SEAL $SEAL_TAG ($SEAL_COMMIT)" >&2
        exit 2
    fi
}

# build_seal NAME [cmake args...]: SEAL built and installed under $WORK/NAME-install
build_seal() {
    local name="$1"; shift
    if [ ! -f "$WORK/$name-install/lib/libseal-4.4.a" ]; then
        cmake -S "$WORK/SEAL" -B "$WORK/$name-seal" "${SEAL_FLAGS[@]}" \
              -DCMAKE_INSTALL_PREFIX="$WORK/$name-install" "$@" >"$WORK/$name-seal.log" \
            || fail "configuring SEAL ($name) failed; see $WORK/$name-seal.log"
        cmake --build "$WORK/$name-seal" -j "$JOBS" >>"$WORK/$name-seal.log" 2>&1 \
            || fail "building SEAL ($name) failed; see $WORK/$name-seal.log"
        cmake --install "$WORK/$name-seal" >>"$WORK/$name-seal.log" 2>&1 \
            || fail "installing SEAL ($name) failed; see $WORK/$name-seal.log"
    fi
}

kat() {
    need g++
    build_seal native
    cmake -S "$HERE" -B "$WORK/native-harness" -DCMAKE_BUILD_TYPE=Release -DVEIL_BUILD_ARMV7_CLIENT=OFF \
          -DSEAL_DIR="$WORK/native-install/lib/cmake/SEAL-4.4" >"$WORK/native-harness.log" \
        || fail "configuring the KAT harness failed; see $WORK/native-harness.log"
    cmake --build "$WORK/native-harness" -j "$JOBS" >>"$WORK/native-harness.log" 2>&1 \
        || fail "building the KAT harness failed; see $WORK/native-harness.log"
    "$WORK/native-harness/seal_kat" >"$WORK/seal_4.4.3_kat.json" || fail "seal_kat failed"
    if cmp -s "$WORK/seal_4.4.3_kat.json" "$KAT_COMMITTED"; then
        echo "kat: $WORK/seal_4.4.3_kat.json is byte for byte the committed file ($(wc -c <"$KAT_COMMITTED") bytes)"
    else
        echo "kat: DIFFERS from $KAT_COMMITTED:"
        cmp "$WORK/seal_4.4.3_kat.json" "$KAT_COMMITTED" || true
        return 1
    fi
}

armv7() {
    need arm-linux-gnueabihf-g++ qemu-arm cc python3
    build_seal armv7 -DCMAKE_TOOLCHAIN_FILE="$HERE/armv7-toolchain.cmake"
    cmake -S "$HERE" -B "$WORK/armv7-harness" -DCMAKE_TOOLCHAIN_FILE="$HERE/armv7-toolchain.cmake" \
          -DCMAKE_BUILD_TYPE=Release -DVEIL_BUILD_KAT=OFF \
          -DSEAL_DIR="$WORK/armv7-install/lib/cmake/SEAL-4.4" >"$WORK/armv7-harness.log" \
        || fail "configuring the ARMv7 client failed; see $WORK/armv7-harness.log"
    cmake --build "$WORK/armv7-harness" -j "$JOBS" >>"$WORK/armv7-harness.log" 2>&1 \
        || fail "building the ARMv7 client failed; see $WORK/armv7-harness.log"
    cc -O2 -shared -fPIC -fvisibility=hidden -o "$WORK/libinsn_count.so" "$HERE/insn_count.c" \
        || fail "building the qemu plugin insn_count.c failed"
    local out="$WORK/armv7_counts.txt"
    : >"$out"
    for set in "${ARMV7_SETS[@]}"; do
        read -r n bits <<<"$set"
        for mode in setup enc dec; do
            rm -f "$WORK/count.tmp"
            qemu-arm -plugin "$WORK/libinsn_count.so,out=$WORK/count.tmp" \
                     "$WORK/armv7-harness/armv7_client" "$mode" "$n" "$bits" >/dev/null \
                || fail "qemu-arm armv7_client $mode $n $bits failed"
            [ -s "$WORK/count.tmp" ] || fail "qemu-arm armv7_client $mode $n $bits wrote no count"
            echo "$n $bits $mode $(cat "$WORK/count.tmp")" | tee -a "$out"
        done
    done
    python3 "$HERE/compare_armv7.py" "$out" "$ARMV7_COMMITTED"
}

status=0
if [ "$WHAT" = kat ] || [ "$WHAT" = all ]; then fetch_seal; kat || status=1; fi
if [ "$WHAT" = armv7 ] || [ "$WHAT" = all ]; then fetch_seal; armv7 || status=1; fi
exit $status
