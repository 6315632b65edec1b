#!/usr/bin/env bash
# Runs the C unit test binaries given as arguments (`make ctest` calls it), each with its output
# shown as it runs, and ends with a summary that names every binary that failed, its exit status
# and the end of its output, so that the tail of a long CI log says which test it was.
#
# One retry, only for LeakSanitizer's own crash: its exit-time tracer can die of a signal while
# a driver's worker threads (PoCL's, libgomp's) are alive ("Tracer caught signal",
# "LeakSanitizer has encountered a fatal error"). That says nothing about the test, which has
# already finished; the binary is run again once and the retry is reported. Any other failure,
# a leak report or a failed CHECK included, fails at once.
set -u
failed=()
retried=()
log=$(mktemp /tmp/ttc-ctest-XXXXXX)
trap 'rm -f "$log" "$log.failed"' EXIT
for t in "$@"; do
    for attempt in 1 2; do
        echo "== $t"
        "$t" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
        if [ "$rc" -ne 0 ] && [ "$attempt" -eq 1 ] &&
           grep -q -E "Tracer caught signal|LeakSanitizer has encountered a fatal error" "$log" &&
           ! grep -q -E "^FAIL |ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error:" "$log"; then
            retried+=("$t")
            echo "-- $t: LeakSanitizer's tracer crashed at exit (exit $rc); running it once more"
            continue
        fi
        break
    done
    if [ "$rc" -ne 0 ]; then
        failed+=("$t (exit $rc)")
        { echo "---- end of $t's output:"; tail -n 30 "$log"; } >> "$log.failed"
    fi
done
echo "== C tests: $# binaries, ${#failed[@]} failed, ${#retried[@]} rerun after a LeakSanitizer tracer crash"
for r in "${retried[@]+"${retried[@]}"}"; do echo "   rerun: $r"; done
if [ ${#failed[@]} -gt 0 ]; then
    cat "$log.failed"
    rm -f "$log.failed"
    for f in "${failed[@]}"; do echo "FAILED: $f"; done
    exit 1
fi
exit 0
