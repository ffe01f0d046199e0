#!/usr/bin/env python3
# Abuse of the control socket (used by ctl-abuse.sh). For SECONDS, all at
# once: N idle connections, each replaced as soon as the daemon closes it so
# that N stay connected throughout; garbage, truncated and oversized
# requests; a request sent one byte per 100 ms; clients that send requests
# and never read the replies. Meanwhile runs `stackmapctl status`
# repeatedly and measures each answer.
# Prints "worst_status_s=X failures=N runs=N idle=N idle_closed=N" and the
# failures; exit 1 if a helper itself broke.
import os, select, socket, subprocess, sys, threading, time

sock_path, ctl, n_idle, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
stop = threading.Event()
lock = threading.Lock()
problems = []           # the harness's own failures (not the daemon's)
idle_closed = [0]


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sock_path)
    return s


def idle_keeper():
    conns = []
    try:
        while not stop.is_set():
            while len(conns) < n_idle and not stop.is_set():
                conns.append(connect())
            # the daemon closes an idle client after its idle timeout or to
            # make room for a new one: replace it, keeping the pressure on
            ready, _, _ = select.select(conns, [], [], 0.2)
            for s in ready:
                try:
                    while s.recv(65536, socket.MSG_DONTWAIT):
                        pass
                except (BlockingIOError, ConnectionResetError):
                    pass
                conns.remove(s)
                s.close()
                with lock:
                    idle_closed[0] += 1
    except OSError as e:
        problems.append("idle client: %s" % e)
    for s in conns:
        s.close()


def garbage():
    payloads = (os.urandom(100), b"\0\0\0", b"stat", b"status " + b"x=" * 3000, b"A" * 70000,
                b"status \xff\xfe", b"list a=\"unterminated")
    while not stop.is_set():
        for p in payloads:
            try:
                s = connect()
                try:
                    s.send(p)
                except OSError:
                    pass
                s.close()
            except OSError:
                pass
        time.sleep(0.02)


def slow():
    while not stop.is_set():
        try:
            s = connect()
            for c in b"status":
                if stop.is_set():
                    break
                s.send(bytes([c]))
                time.sleep(0.1)
            s.close()
        except OSError:
            pass


def never_reads():
    # keep asking and never read: the daemon's replies back up until it
    # must give up on this client (it closes it after its reply deadline)
    held = []
    while not stop.is_set():
        if len(held) < 2:
            try:
                s = connect()
                s.setblocking(False)
                held.append(s)
            except OSError:
                pass
        for s in list(held):
            try:
                s.send(b"status")
            except BlockingIOError:
                pass
            except OSError:
                held.remove(s)  # the daemon closed it
                s.close()
        stop.wait(0.01)
    for s in held:
        s.close()


threads = [threading.Thread(target=f) for f in (idle_keeper, garbage, garbage, slow, never_reads)]
for t in threads:
    t.start()
time.sleep(1)           # let the idle clients fill the server first
worst, failures, runs, end = 0.0, [], 0, time.time() + seconds
while time.time() < end:
    t0 = time.time()
    try:
        r = subprocess.run([ctl, "--socket", sock_path, "status"], capture_output=True, timeout=30)
        rc, err = r.returncode, r.stderr.decode().strip()
    except subprocess.TimeoutExpired:
        rc, err = -1, "no answer in 30 s"
    dt = time.time() - t0
    worst = max(worst, dt)
    runs += 1
    if rc != 0:
        failures.append("status exited %d after %.2fs: %s" % (rc, dt, err))
    elif dt > 1.0:
        failures.append("status took %.2fs" % dt)
    time.sleep(0.2)
stop.set()
for t in threads:
    t.join()
print("worst_status_s=%.2f failures=%d runs=%d idle=%d idle_closed=%d"
      % (worst, len(failures), runs, n_idle, idle_closed[0]))
for f in failures[:5] + problems:
    print(f)
sys.exit(1 if problems else 0)
