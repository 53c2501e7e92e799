# demo_lib.sh -- what the demos share (sourced by demo.sh and demo_ec2.sh):
# wait for the daemon they started, then submit a job and watch it.
# Needs $ctl, $sock and $run set.

# Wait until proteusd answers on $sock (10 s), else print its log and fail.
demo_wait_daemon() {
	i=0
	until "$ctl" --socket "$sock" ping > /dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 100 ]; then
			echo "proteusd did not start; its log:" >&2
			cat "$run/proteusd.log" >&2
			exit 1
		fi
		sleep 0.1
	done
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
