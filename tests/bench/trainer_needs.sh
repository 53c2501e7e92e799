# trainer_needs.sh -- sourced by the trainer benches (bench_trainer*.sh):
# the trainer built, Fashion-MNIST installed, jq; otherwise a message
# naming the bench and what to do, and exit 2.
#   in: BUILD (default build); out: T (proteus-trainer), DATA.
BUILD=${BUILD:-build}
T="$BUILD/proteus-trainer"
DATA=/usr/share/datasets/fashion-mnist
_bench=$(basename "$0" .sh)
if [ ! -x "$T" ]; then
	echo "$_bench: '$T' not built (run make)" >&2
	exit 2
fi
if [ ! -r "$DATA/train-images-idx3-ubyte.gz" ]; then
	echo "$_bench: dataset-fashion-mnist not installed (scripts/deps.sh bench)" >&2
	exit 2
fi
command -v jq >/dev/null 2>&1 || {
	echo "$_bench: needs jq (scripts/deps.sh bench)" >&2
	exit 2
}
