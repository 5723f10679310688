#!/usr/bin/env bash
# The push and pull-request check (.github/workflows/ci.yml), runnable as is
# on any machine with Go's output binary:
#
#   .github/scripts/push.sh OUT
#
# 1. every shipped experiment the simulator models (lbchaos list --engine
#    sim), in full, in virtual time: a failed expectation or a run error
#    fails the check;
# 2. a short real smoke run on in-process backends (fast-fail, built-in
#    strategies, SMOKE_DURATION at SMOKE_RATE): it must complete; its
#    expectations are advisory, since the load is not the file's;
# 3. OUT/junit.xml: every run's expectations as JUnit XML;
# 4. OUT/summary.md: a table of the runs and every report.md, appended to
#    $GITHUB_STEP_SUMMARY when that is set (cut to GitHub's 1 MiB limit).
#
# Environment: LBCHAOS (the binary; default bin/lbchaos), EXPERIMENTS
# (names or experiment files; default: every one lbchaos list --engine sim
# shows), SMOKE_DURATION (2s), SMOKE_RATE
# (400). Exits 1 when anything failed, after doing everything else.
set -uo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT" >&2
	exit 2
fi
out=$1
lbchaos=${LBCHAOS:-bin/lbchaos}
smoke_duration=${SMOKE_DURATION:-2s}
smoke_rate=${SMOKE_RATE:-400}
if [ ! -x "$lbchaos" ]; then
	echo "push: LBCHAOS=$lbchaos is not an executable (make build)" >&2
	exit 2
fi
experiments=${EXPERIMENTS:-$("$lbchaos" list --engine sim | awk '{print $1}')}
if [ -z "$experiments" ]; then
	echo "push: no experiments (EXPERIMENTS is empty and lbchaos list --engine sim showed none)" >&2
	exit 2
fi
mkdir -p "$out/sim" "$out/smoke"

status=0
rows=()

# expectations_line LOG: the "expectations: N passed, M failed" line of a
# run's output, or "none".
expectations_line() {
	local line
	line=$(grep -m1 '^expectations:' "$1" 2>/dev/null | sed 's/^expectations: //')
	echo "${line:-none}"
}

for exp in $experiments; do
	# A shipped experiment's name, or an experiment file's path.
	name=$(basename "$exp" .yaml)
	dir="$out/sim/$name"
	"$lbchaos" run "$exp" --engine sim --quiet --out "$dir" >"$out/sim/$name.log" 2>&1
	rc=$?
	case $rc in
	0) verdict="ok" ;;
	3) verdict="expectations FAILED"; status=1 ;;
	*) verdict="ERROR (exit $rc)"; status=1 ;;
	esac
	if [ $rc -ne 0 ]; then
		echo "::error title=sim $name::$verdict; see $out/sim/$name.log"
		tail -n 30 "$out/sim/$name.log"
	fi
	echo "push: sim $name: $verdict"
	rows+=("| $name | sim | $verdict | $(expectations_line "$out/sim/$name.log") |")
done

# The real stack end to end: load generator, balancing transport, backends
# with a fault, collector and reports; a couple of seconds.
smoke="$out/smoke/fast-fail"
"$lbchaos" run fast-fail --backends process --duration "$smoke_duration" --rate "$smoke_rate" \
	--strategies 'round-robin,least-inflight+eject(consecutive=5,duration=5s)' \
	--raw=false --quiet --out "$smoke" >"$out/smoke/fast-fail.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	verdict="ok"
else
	verdict="ERROR (exit $rc)"
	status=1
	echo "::error title=smoke fast-fail::real run on process backends failed (exit $rc); see $out/smoke/fast-fail.log"
	tail -n 30 "$out/smoke/fast-fail.log"
fi
echo "push: smoke fast-fail (process backends, $smoke_duration at $smoke_rate req/s): $verdict"
rows+=("| fast-fail | real, process backends, $smoke_duration at $smoke_rate req/s | $verdict | $(expectations_line "$out/smoke/fast-fail.log") (advisory) |")

runs=()
for d in "$out"/sim/* "$out"/smoke/*; do
	[ -f "$d/summary.json" ] && runs+=("$d")
done
if [ ${#runs[@]} -gt 0 ]; then
	if ! "$lbchaos" junit --name "lbchaos push check" --out "$out/junit.xml" "${runs[@]}"; then
		echo "::error::could not write $out/junit.xml"
		status=1
	fi
fi

{
	echo "# lbchaos: every experiment in sim, and a real smoke run"
	echo
	echo "| experiment | engine | result | expectations |"
	echo "| --- | --- | --- | --- |"
	printf '%s\n' "${rows[@]}"
	echo
	for d in "$smoke" "$out"/sim/*; do
		[ -f "$d/report.md" ] || continue
		echo "<details><summary>$(basename "$(dirname "$d")")/$(basename "$d"): report.md</summary>"
		echo
		cat "$d/report.md"
		echo
		echo "</details>"
		echo
	done
} >"$out/summary.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	# GitHub refuses a step summary over 1 MiB.
	head -c 1000000 "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"
fi

exit $status
