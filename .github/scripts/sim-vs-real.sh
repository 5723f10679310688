#!/usr/bin/env bash
# The simulator against the real run, scenario by scenario (make
# sim-vs-real):
#
#   .github/scripts/sim-vs-real.sh OUT [SCENARIO...]
#
# For each scenario (default: fast-fail slow-instance crash freeze
# noisy-neighbor), a real run into OUT/NAME, then lbchaos simcheck OUT/NAME:
# its key metric and faulty share per strategy beside the simulation
# calibrated from it and the uncalibrated one, and whether they agree
# (within 10%, or 0.5 percentage points for a share). crash, freeze and
# noisy-neighbor run on Docker backends, and are skipped with a note when no
# Docker daemon answers; the others in process. Only the strategies the
# simulator runs are run (no proxies, no gRPC).
#
# Environment: LBCHAOS (default bin/lbchaos), RUN_ARGS (flags for every
# real run, e.g. "--rate 1000"), LOCK (a file: each real run holds it with
# flock, so that no other measurement runs beside it). Exits 1 when a run or
# a check failed, after doing everything else; disagreement is reported, not
# an error.
set -uo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 OUT [SCENARIO...]" >&2
	exit 2
fi
out=$1
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(fast-fail slow-instance crash freeze noisy-neighbor)
lbchaos=${LBCHAOS:-bin/lbchaos}
run_args=${RUN_ARGS:-}
if [ ! -x "$lbchaos" ]; then
	echo "sim-vs-real: LBCHAOS=$lbchaos is not an executable (make build)" >&2
	exit 2
fi
docker_ok=0
docker info >/dev/null 2>&1 && docker_ok=1
lock=()
[ -n "${LOCK:-}" ] && lock=(flock "$LOCK")
mkdir -p "$out"

status=0
for name in "${scenarios[@]}"; do
	backends=process
	case $name in
	crash | freeze | noisy-neighbor) backends=docker ;;
	esac
	if [ $backends = docker ] && [ $docker_ok = 0 ]; then
		echo "sim-vs-real: $name: skipped: it needs Docker backends and no Docker daemon answers"
		continue
	fi
	# The strategies the simulator runs: no proxy (NAME:...), no gRPC.
	strategies=$("$lbchaos" run "$name" --engine sim --duration 1ms --quiet --out "$(mktemp -d)" 2>/dev/null |
		awk '/^STRATEGY/ {on=1; next} on && NF == 0 {exit} on && $2 ~ /^[0-9]+$/ {print $1}' | paste -sd, -)
	if [ -z "$strategies" ]; then
		echo "sim-vs-real: $name: no simulated strategy" >&2
		status=1
		continue
	fi
	dir="$out/$name"
	# RUN_ARGS is a list of flags: split on purpose.
	# shellcheck disable=SC2086
	"${lock[@]}" "$lbchaos" run "$name" --backends "$backends" --strategies "$strategies" \
		--raw=false --quiet --force --out "$dir" $run_args >"$out/$name.log" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
		echo "sim-vs-real: $name: the real run failed (exit $rc); see $out/$name.log" >&2
		status=1
		continue
	fi
	if ! "$lbchaos" simcheck --out "$out/sim" "$dir" | tee "$out/$name.simcheck.txt"; then
		status=1
	fi
	echo
done
exit $status
