# demo_lib.sh -- what the demos share (sourced by demo.sh and demo_ec2.sh,
# and by tests/bench/bench_ec2_fleet.sh): start the fake EC2 and proteusd
# on it, wait for the daemon they started, then submit a job and watch it.
# Needs $ctl, $sock and $run set ($here and $BUILD for the ec2 ones).

# The demo's paths: $BUILD made absolute (default build), $ctl, and its
# folder $run = $BUILD/$1 with the daemon's $db and $sock in it.  Needs
# $here (the checkout).
demo_paths() {
	: "${BUILD:=build}"
	case "$BUILD" in /*) ;; *) BUILD="$here/$BUILD" ;; esac
	ctl="$BUILD/proteusctl"
	run="$BUILD/$1"
	db="$run/proteus.db"
	sock="$run/proteusd.sock"
}

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

# The example job's market ($1): c4.large and m4.large in every zone from a
# day before $origin, c4.large cheaper in us-east-1b from an hour before.
demo_ec2_market() {
	cat > "$1" <<JSON
[{"type": "c4.large", "zone": "*", "price": 0.031, "ts": $((origin - 86400))},
 {"type": "m4.large", "zone": "*", "price": 0.037, "ts": $((origin - 86400))},
 {"type": "c4.large", "zone": "us-east-1b", "price": 0.029, "ts": $((origin - 3600))}]
JSON
}

# $run/proteusd.conf: the ec2 world on the fake at $port (two zones), its
# clock $speedup times faster from $origin, the nodes' ports $1 (LO-HI).
demo_ec2_conf() {
	cat > "$run/proteusd.conf" <<CONF
db $run/proteus.db
control_socket $sock
log_level notice
region us-east-1
ec2_endpoint http://127.0.0.1:$port/
ec2_ami ami-0123456789abcdef0
ec2_subnets us-east-1a=subnet-0000000000000000a,us-east-1b=subnet-0000000000000000b
ec2_security_groups sg-0123456789abcdef0
ec2_instance_profile proteus-node
head_address 127.0.0.1
trainer_ports $1
ec2_node_trainer $BUILD/proteus-trainer
ec2_clock_speedup $speedup
ec2_clock_origin $origin
ec2_identity_cert $run/identity.pem
ec2_price_poll_s 60
CONF
}

# Every process of a bench's run, whatever happened: the daemon ($daemon),
# then the fake ($fake: its stdin's end, fd 3, makes it kill every
# instance's process group and reap them), then anything still working in
# the instances' directories (processes this run started, found by their
# working directory).
demo_stop_all() {
	set +e
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	exec 3>&- 2>/dev/null
	if [ -n "$fake" ]; then
		i=0
		while kill -0 "$fake" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$fake" 2>/dev/null
		wait "$fake" 2>/dev/null
	fi
	for p in /proc/[0-9]*; do
		case $(readlink "$p/cwd" 2>/dev/null) in
		"$run/instances"/*) kill -9 "${p#/proc/}" 2>/dev/null ;;
		esac
	done
}

# A bench's run done: the fake's state (calls, faults) in
# $run/fake_state.json, the daemon stopped, then the fake (its closing
# line in $run/fake.out); $daemon and $fake cleared.
demo_end_run() {
	curl -sf "http://127.0.0.1:$port/_ctl?cmd=state" > "$run/fake_state.json" || true
	kill "$daemon"
	wait "$daemon" 2>/dev/null || true
	daemon=
	exec 3>&-
	wait "$fake" 2>/dev/null || true
	fake=
}
