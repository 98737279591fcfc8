# Clipyard runtime service wrapper (POSIX sh).  Usage: sh wrapper.sh RUN_DIR COMMAND [PREFIX...]
#
# PREFIX, when given, is the sandbox's argv (`bwrap ... setpriv ... --`): the command runs as
# `PREFIX /bin/sh -c COMMAND`, contained, while the wrapper stays outside and writes RUN_DIR.
#
# Started by the supervisor as the leader of a new session (its pid is the process group id).
# It runs COMMAND with `sh -c` in the same group, its output appended to RUN_DIR/output.log,
# writes the command's pid to RUN_DIR/child.pid, and when the command ends writes its status to
# RUN_DIR/status (atomically, by rename): `exit <code>` or `signal <n>`.  It outlives the
# supervisor (no pipes to it), so the status of a command that ended while no supervisor watched
# is still known.
#
# Telling an exit code from a signal: sh reports a child killed by signal n as 128+n and there is
# no other way to see the wait status in sh, so a status from 129 to 192 is recorded as
# `signal <status-128>`.  A command that itself calls exit(137) is therefore recorded as
# `signal 9` (the usual reading: shells report their own signalled children that way too).
#
# SIGTERM, SIGINT and SIGHUP sent to the wrapper alone are forwarded to the command; the wrapper
# keeps waiting (a trapped signal interrupts `wait`) and records how the command ended.  (POSIX sh
# starts a background command with SIGINT and SIGQUIT ignored, so only SIGTERM and SIGHUP stop it.)
# No variable of the wrapper is exported: the command sees exactly the environment given.

run_dir=$1
command=$2
shift 2
"$@" /bin/sh -c "$command" </dev/null >>"$run_dir/output.log" 2>&1 &
child=$!

# The traps are set only now: a child forked while they were set keeps the wrapper's handler
# until it executes `sh -c`, and a SIGTERM forwarded in that window would be caught and lost.
forward() {
	kill "-$1" "$child" 2>/dev/null
}
trap 'forward TERM' TERM
trap 'forward INT' INT
trap 'forward HUP' HUP

# `command -p`: mv is found on the system's default PATH, whatever PATH the command was given.
if ! { printf '%s\n' "$child" >"$run_dir/child.pid.tmp" &&
	command -p mv -f "$run_dir/child.pid.tmp" "$run_dir/child.pid"; }; then
	# Unrecorded, the command could be neither adopted nor stopped: do not leave it running.
	kill -KILL "$child" 2>/dev/null
	exit 1
fi

while :; do
	wait "$child"
	code=$?
	# Up to 128 `wait` returned the command's own status; above, either the command was signalled
	# or a trapped signal interrupted `wait` while the command still runs (or is not yet reaped).
	[ "$code" -le 128 ] && break
	if ! kill -0 "$child" 2>/dev/null; then
		# Reaped while `wait` was interrupted: a second `wait` returns the status not yet
		# reported (127 if it was reported already).
		wait "$child"
		again=$?
		[ "$again" -ne 127 ] && code=$again
		break
	fi
done

if [ "$code" -gt 128 ] && [ "$code" -le 192 ]; then
	line="signal $((code - 128))"
else
	line="exit $code"
fi
printf '%s\n' "$line" >"$run_dir/status.tmp" && command -p mv -f "$run_dir/status.tmp" "$run_dir/status"
