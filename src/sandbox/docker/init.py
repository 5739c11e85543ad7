# PID 1 of every docker sandbox container (python3, as root; argv[1]: the job time limit in seconds). It reaps
# orphans (so killed daemons leave no zombies to fill the pids limit), exits at the job time limit (so the container
# ends even if the runner dies), and on SIGUSR1 (sent by the engine, no new process needed) kills every process that
# does not run as root, until none is left: that works even while a fork bomb holds every pid, when no exec could
# start. It forks nothing, and signals from the sandbox user cannot reach it (another uid; a namespace's PID 1
# ignores what it does not handle). Read by containerSpec.ts and passed with `python3 -c`.
import os, signal, sys, time
end = time.monotonic() + int(sys.argv[1])
def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
def others():
    for p in os.listdir('/proc'):
        if not p.isdigit() or p == '1':
            continue
        state = uid = None
        try:
            with open('/proc/%s/status' % p) as f:
                for line in f:
                    if line.startswith('State:'):
                        state = line.split()[1]
                    elif line.startswith('Uid:'):
                        uid = int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
        if uid not in (None, 0) and state not in ('Z', 'X'):
            yield int(p)
def sweep(*_):
    for _ in range(100):
        left = False
        for pid in others():
            left = True
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not left:
            return
signal.signal(signal.SIGCHLD, reap)
signal.signal(signal.SIGUSR1, sweep)
while time.monotonic() < end:
    time.sleep(min(5, max(0.01, end - time.monotonic())))
