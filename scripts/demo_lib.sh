# demo_lib.sh -- what the demos share (sourced by demo.sh and demo_ec2.sh,
# and by tests/bench/bench_ec2_fleet.sh): start the fake EC2 and proteusd
# on it, wait for the daemon they started, then submit a job and watch it.
# Needs $ctl, $sock and $run set ($here and $BUILD for the ec2 ones).

# Run command "$3"... every 0.1 s until it succeeds (10 s), else print
# the line $1 and the log file $2 and fail.
demo_wait_for() {
	demo_what=$1 demo_log=$2
	shift 2
	i=0
	until "$@" > /dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 100 ]; then
			echo "$demo_what" >&2
			cat "$demo_log" >&2
			exit 1
		fi
		sleep 0.1
	done
}

# Start the fake EC2 (tests/fake_ec2/fake_ec2.py) with options "$@": its
# stdin the fifo $run/fake.in, held open on fd 3 (closing fd 3 stops it,
# and it takes every instance with it), its stdout $run/fake.out, stderr
# $run/fake.log.  Sets $fake (its pid) and, once it says so (10 s, else
# print its log and fail), $port.
demo_start_fake() {
	mkfifo "$run/fake.in"
	python3 "$here/tests/fake_ec2/fake_ec2.py" "$@" \
		< "$run/fake.in" > "$run/fake.out" 2> "$run/fake.log" &
	fake=$!
	exec 3> "$run/fake.in"
	demo_wait_for "the fake did not start:" "$run/fake.log" \
		grep -q '^PORT ' "$run/fake.out"
	port=$(sed -n 's/^PORT //p' "$run/fake.out")
}

# Start $BUILD/proteusd on $run/proteusd.conf (an ec2 world on the fake)
# with the fake's own test keys: nothing here reaches AWS.  Its log is
# $run/proteusd.log; sets $daemon.
demo_start_ec2_daemon() {
	AWS_ACCESS_KEY_ID=AKIDEXAMPLE \
	AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY \
	AWS_EC2_METADATA_DISABLED=true \
		"$BUILD/proteusd" --config "$run/proteusd.conf" \
		> "$run/proteusd.log" 2>&1 &
	daemon=$!
}

# Wait until proteusd answers on $sock (10 s), else print its log and fail.
demo_wait_daemon() {
	demo_wait_for "proteusd did not start; its log:" "$run/proteusd.log" \
		"$ctl" --socket "$sock" ping
}

# Submit job file $1, set $id, and watch it to its end.
demo_submit_watch() {
	echo "== proteusctl submit $(basename "$1")"
	id=$("$ctl" --socket "$sock" submit "$1")
	echo "job $id queued"
	echo
	echo "== proteusctl status $id --watch"
	"$ctl" --socket "$sock" status "$id" --watch --interval 0.5 || true
	echo
}
