#!/bin/bash
# make check: build the fuzz targets with clang (libFuzzer, ASan, UBSan)
# and replay the seed corpus and every kept finding (tests/fuzz/crashes/):
# no live fuzzing, so that the suite's result does not depend on a random
# run (that is `make fuzz`, or tests/fuzz/run short|campaign).
# Without clang the test is skipped, except in CI (CI=true), where it fails.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${top_builddir:-$top}/_fuzz
if ! command -v "${CC_FUZZ:-clang}" > /dev/null; then
	if [ "${CI:-}" = true ]; then
		echo "FAIL: clang is needed to build the fuzz targets (apt-get install clang)"
		exit 1
	fi
	echo "SKIP: clang is not installed; the fuzz targets are not built"
	exit 77
fi
CC=${CC_FUZZ:-clang} "$top/tests/fuzz/build" "$out" || { echo "FAIL: fuzz build"; exit 1; }
exec "$top/tests/fuzz/run" replay "$out"
