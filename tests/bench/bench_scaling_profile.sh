#!/bin/sh
# bench_scaling_profile.sh -- measure a scaling profile for job specs
# (issue 12, item 5): `proteus-trainer local` (MLR, Fashion-MNIST, BSP, one
# PS per two workers) at 1, 2 and 4 workers for the same number of
# samples, REPEAT times each; prints the profile as JSON (the object a job
# spec's `scaling_profile` takes, docs/jobspec.md): mean samples/s and
# mean test accuracy per sample trained, with what was run and where.
#   env: BUILD (default build), EPOCHS (default 6), REPEAT (default 2).
# Runs are short on purpose (about 2 s each): the machine may be shared.
set -eu

EPOCHS=${EPOCHS:-6}
REPEAT=${REPEAT:-2}
. "$(dirname "$0")/trainer_needs.sh"

runs=""
for w in 1 2 4; do
	ps=$(( (w + 1) / 2 ))
	i=0
	while [ "$i" -lt "$REPEAT" ]; do
		r=$("$T" local --model mlr --epochs "$EPOCHS" --workers "$w" \
			--ps "$ps" --timeout 300 --batch 128 --lr 0.05 \
			--momentum 0.9 --schedule cosine --threads 1 --json \
			2>/dev/null)
		runs="$runs$(echo "$r" | jq -c --argjson w "$w" \
			'{workers: $w, samples_per_sec, test_accuracy, samples}')
"
		i=$((i + 1))
	done
done
commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
printf '%s' "$runs" | jq -s --arg commit "$commit" --arg cpu "$cpu" \
	--arg nproc "$(nproc)" --arg date "$(date -u +%Y-%m-%dT%H:%MZ)" \
	--argjson epochs "$EPOCHS" '
	group_by(.workers) | {
	  "_source": ("tests/bench/bench_scaling_profile.sh: proteus-trainer local --model mlr --epochs \($epochs) --batch 128 --lr 0.05 --momentum 0.9 --schedule cosine --threads 1, BSP, one PS per two workers, \(.[0] | length) runs per point, means; commit \($commit), \($date)"),
	  "_machine": "\($cpu), nproc \($nproc): every worker shares these cores, so throughput saturates with the cores, not with a network",
	  "_runs": [.[][] ],
	  workers: [.[] | .[0].workers],
	  samples_per_s: [.[] | (map(.samples_per_sec) | add / length | round)],
	  accuracy_per_sample: [.[] | (map(.test_accuracy / .samples) | add / length)]
	}'
