#!/bin/sh
# deps.sh -- install the Debian packages Proteus needs that are missing.
# Usage: scripts/deps.sh [build|test|bench|fuzz]...   (default: build test)
# Says what it installs; does nothing (and needs no network) when all are
# present.  Uses sudo when not root.
set -eu

build="build-essential pkg-config libcurl4-openssl-dev libssl-dev \
libjansson-dev libsqlite3-dev libnanomsg-dev zlib1g-dev libxml2-dev \
libyajl-dev libopenblas-dev"
test="libcriterion-dev python3 python3-botocore python3-cryptography python3-numpy dataset-fashion-mnist curl \
sqlite3 gnuplot-nox prometheus python3-torch iptables"
bench="jq bc hyperfine time"
fuzz="clang libclang-rt-14-dev"

[ $# -gt 0 ] || set -- build test
want=""
for set in "$@"; do
	case "$set" in
	build) want="$want $build" ;;
	test) want="$want $build $test" ;;
	bench) want="$want $build $test $bench" ;;
	fuzz) want="$want $build $fuzz" ;;
	*) echo "deps.sh: unknown set '$set' (build|test|bench|fuzz)" >&2; exit 2 ;;
	esac
done

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$s" in
	"install ok installed") ;;
	*) missing="$missing $p" ;;
	esac
done
[ -n "$missing" ] || exit 0

echo "deps.sh: installing:$missing"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: apt-get not found; install these by hand:$missing" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
