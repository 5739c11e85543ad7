# Every command of the docker sandbox runs under this (after sweep.sh's function), as root with only
# CAP_KILL/SETUID/SETGID: `bash -c <sweep.sh + this> sandbox UID GID ARGV...`. It starts the command as the sandbox
# user (setpriv: uid, gid, no supplementary groups; the kernel clears every capability on the switch and
# no-new-privileges keeps it so), waits for it, then sweeps. A daemon that left the command's session, a fake pid
# file, or a command that kills its parent cannot change that: the wrapper is another uid, and it reads nothing the
# sandbox can write. Its own stderr goes to /dev/null (fd 3 carries the command's), so no "Killed" notices.
# Exit status: the command's, or 253 (SWEEP_FAILED_EXIT in programs.ts) when processes survived the sweep.
exec 3>&2 2>/dev/null
uid=$1
gid=$2
shift 2
setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all -- "$@" 2>&3 3>&-
rc=$?
sweep || exit 253
exit $rc
