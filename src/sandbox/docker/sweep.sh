# sweep: kills every process in the container that does not run as root, until none is left (or gives up: status
# 1). Run as root holding CAP_KILL, so processes of the sandbox user can neither signal it nor escape it; `kill -1`
# spares PID 1 and the caller; the scan repeats the kill while anything of another uid (a fork racing the first
# kill) is still alive. Zombies (state Z/X) are already dead; PID 1 reaps them. No forks: it must work with the
# pids limit exhausted. Defines the function only; exec-wrapper.sh and DockerSandbox.sweep call it.
sweep() {
  local i f k v s u left
  for ((i = 0; i < 100; i++)); do
    kill -KILL -1 2>/dev/null
    left=
    for f in /proc/[0-9]*/status; do
      s=
      u=
      { while read -r k v _; do case $k in State:) s=$v;; Uid:) u=$v; break;; esac; done < "$f"; } 2>/dev/null
      if [ -n "$u" ] && [ "$u" != 0 ] && [ "$s" != Z ] && [ "$s" != X ]; then left=1; break; fi
    done
    [ -z "$left" ] && return 0
  done
  return 1
}
