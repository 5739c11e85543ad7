# The in-sandbox end of proxy-only egress (python3 stdlib, run as the sandbox user; read by session.ts and passed
# with `python3 -I -c`). argv[1]: the egress proxy's unix socket, argv[2:]: the setup command. It listens on
# 127.0.0.1:3128 (the sandbox's loopback: its only interface), then starts the command, and pipes each connection
# to the socket, where the runner's EgressProxy decides. It exits with the command's status once the command ends.
# It adds no way out: it only reaches the socket, and the proxy behind it refuses what the allowlist does not admit.
import os, socket, sys, threading
SOCK = sys.argv[1]
MAX_CONNECTIONS = 64
slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('127.0.0.1', 3128))
srv.listen(64)
pid = os.fork()
if pid == 0:
    srv.close()
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s, how in ((b, socket.SHUT_WR), (a, socket.SHUT_RD)):
        try:
            s.shutdown(how)
        except OSError:
            pass
def serve(client):
    try:
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        up.settimeout(15)
        up.connect(SOCK)
        up.settimeout(None)
    except OSError:
        client.close()
        slots.release()
        return
    t = threading.Thread(target=pump, args=(up, client), daemon=True)
    t.start()
    pump(client, up)
    t.join()
    client.close()
    up.close()
    slots.release()
def accept():
    while True:
        try:
            client, _ = srv.accept()
        except OSError:
            return
        if not slots.acquire(timeout=30):
            client.close()
            continue
        threading.Thread(target=serve, args=(client,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
