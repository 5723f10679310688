#!/usr/bin/env bash
# Prints the id of the workflow run that uploaded the newest unexpired
# artifact named ARTIFACT on BRANCH, or nothing when there is none:
#
#   .github/scripts/baseline-run.sh ARTIFACT BRANCH
#
# Needs gh with GH_TOKEN (actions: read) and GITHUB_REPOSITORY, as on
# GitHub Actions. The REST API lists a repository's artifacts filtered by
# name; actions/download-artifact then fetches that run's artifact.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 ARTIFACT BRANCH" >&2
	exit 2
fi
gh api -X GET "repos/$GITHUB_REPOSITORY/actions/artifacts" -f name="$1" -f per_page=100 \
	--jq "[.artifacts[] | select(.expired | not) | select(.workflow_run.head_branch == \"$2\")] | sort_by(.created_at) | last | .workflow_run.id // empty"
