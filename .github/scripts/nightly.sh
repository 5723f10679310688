#!/usr/bin/env bash
# The nightly gate (.github/workflows/nightly.yml), runnable as is on any
# machine with Go's output binary:
#
#   .github/scripts/nightly.sh PREV OUT
#
# For each experiment: lbchaos run NAME --repeat REPEAT into OUT/runs/NAME
# (seeds SEED..SEED+REPEAT-1, medians and ranges in repeats.json), then,
# when PREV/NAME holds the previous night's repeats.json, lbchaos compare
# --fail-on-regression PREV/NAME OUT/runs/NAME: a significant regression
# (every repetition worse than every previous one, and the medians beyond
# the tolerance) or a strategy missing from the new run fails the gate.
# An experiment without a previous result is run and recorded, not compared.
#
# OUT/baseline/NAME receives the bounded copy to keep as the next night's
# PREV: repeats.json, repeats.md, compare.txt and each repetition's
# summary.json and report.md (no report.html, plots or raw data; the runs
# themselves stay in OUT/runs).
# With SIMCHECK=1, a real run's first repetition is also set beside the
# simulations calibrated from it and uncalibrated (lbchaos simcheck) in
# OUT/runs/NAME/simcheck.txt, kept in the baseline and shown in the job
# summary: how far the simulator is from the real run, not a gate.
# OUT/summary.md is the job summary, appended to $GITHUB_STEP_SUMMARY when
# that is set.
#
# Environment: LBCHAOS (the binary; default bin/lbchaos), EXPERIMENTS
# (default: every one lbchaos list shows), REPEAT (3), RUN_ARGS (flags for
# every run; default "--backends docker"), GATE (1; 0 records the results
# without failing on regressions: to accept a deliberate change as the new
# baseline), SIMCHECK (1; 0 skips the simulator check below). Exits 1 when a run failed, an expectation failed on the
# medians, or, with GATE=1, the comparison found a regression or a missing
# strategy; after doing everything else.
set -uo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 PREV OUT" >&2
	exit 2
fi
prev=$1
out=$2
lbchaos=${LBCHAOS:-bin/lbchaos}
repeat=${REPEAT:-3}
gate=${GATE:-1}
simcheck=${SIMCHECK:-1}
run_args=${RUN_ARGS:---backends docker}
if [ ! -x "$lbchaos" ]; then
	echo "nightly: LBCHAOS=$lbchaos is not an executable (make build)" >&2
	exit 2
fi
experiments=${EXPERIMENTS:-$("$lbchaos" list | awk '{print $1}')}
if [ -z "$experiments" ]; then
	echo "nightly: no experiments (EXPERIMENTS is empty and lbchaos list showed none)" >&2
	exit 2
fi
mkdir -p "$out/runs" "$out/baseline"

status=0
rows=()
details=()

for name in $experiments; do
	run="$out/runs/$name"
	log="$out/runs/$name.log"
	# RUN_ARGS is a list of flags: split on purpose.
	# shellcheck disable=SC2086
	"$lbchaos" run "$name" --repeat "$repeat" --raw=false --quiet --out "$run" $run_args >"$log" 2>&1
	rc=$?
	case $rc in
	0) result="ok" ;;
	3) result="expectations FAILED on the medians"; status=1 ;;
	*) result="ERROR (exit $rc)"; status=1 ;;
	esac
	if [ $rc -ne 0 ]; then
		echo "::error title=nightly $name::$result; see $log"
		tail -n 30 "$log"
	fi

	gate_result="no previous result: recorded as the baseline"
	if [ ! -f "$run/repeats.json" ]; then
		gate_result="not compared: the run wrote no repeats.json"
	elif [ -f "$prev/$name/repeats.json" ]; then
		"$lbchaos" compare --fail-on-regression "$prev/$name" "$run" >"$run/compare.txt" 2>&1
		crc=$?
		case $crc in
		0) gate_result="no regression" ;;
		3)
			nreg=$(grep -c '^REGRESSION' "$run/compare.txt")
			nmiss=$(grep -c '^MISSING' "$run/compare.txt")
			gate_result="FAILED: $nreg significant regressions, $nmiss strategies missing"
			grep -E '^(REGRESSION|MISSING)' "$run/compare.txt" | while IFS= read -r line; do
				echo "::error title=nightly $name regression::$(echo "$line" | tr -s ' ')"
			done
			;;
		*)
			gate_result="compare ERROR (exit $crc)"
			cat "$run/compare.txt"
			;;
		esac
		if [ $crc -ne 0 ]; then
			if [ "$gate" = 1 ] || [ $crc -ne 3 ]; then
				status=1
			else
				gate_result="$gate_result (accepted: GATE=0)"
			fi
		fi
	fi
	# The simulator against the real run: informational, never fails.
	first="$run/rep-1"
	[ -d "$first" ] || first="$run"
	if [ "$simcheck" = 1 ] && grep -q '"engine": "real"' "$first/summary.json" 2>/dev/null; then
		if ! "$lbchaos" simcheck "$first" >"$run/simcheck.txt" 2>&1; then
			echo "::warning title=nightly $name simcheck::lbchaos simcheck failed; see simcheck.txt"
		fi
	fi
	echo "nightly: $name: run $result; gate: $gate_result"
	rows+=("| $name | $result | $gate_result |")

	# The bounded baseline: the numbers and the Markdown reports.
	if [ -d "$run" ]; then
		(
			cd "$run" || exit 1
			find . -maxdepth 2 \( -name summary.json -o -name report.md \
				-o -name repeats.json -o -name repeats.md -o -name compare.txt \
				-o -name simcheck.txt \) -print0 |
				while IFS= read -r -d '' f; do
					mkdir -p "../../baseline/$name/$(dirname "$f")"
					cp "$f" "../../baseline/$name/$f"
				done
		)
	fi
	details+=("$name")
done

{
	echo "# lbchaos nightly: $repeat repetitions per experiment, compared with the previous night"
	echo
	echo "| experiment | run | gate |"
	echo "| --- | --- | --- |"
	printf '%s\n' "${rows[@]}"
	echo
	for name in "${details[@]}"; do
		run="$out/runs/$name"
		echo "<details><summary>$name</summary>"
		echo
		if [ -f "$run/compare.txt" ]; then
			echo '```'
			sed -n '/^regressions of B against A/,$p' "$run/compare.txt"
			echo '```'
			echo
		fi
		[ -f "$run/repeats.md" ] && cat "$run/repeats.md"
		if [ -f "$run/simcheck.txt" ]; then
			echo
			echo "Simulator against the first repetition (lbchaos simcheck):"
			echo
			echo '```'
			cat "$run/simcheck.txt"
			echo '```'
		fi
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
