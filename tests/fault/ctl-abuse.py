#!/usr/bin/env python3
# Abuse of the control socket (used by ctl-abuse.sh): opens N idle
# connections, sends garbage, an oversized request, a request one byte per
# 100 ms, and a request whose reply is never read, all at once; meanwhile
# runs `stackmapctl status` repeatedly and reports the slowest answer.
# Prints "worst_status_s=X failures=N" and the failures.
import os, socket, subprocess, sys, threading, time

sock_path, ctl, n_idle, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
conns, stop = [], threading.Event()

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sock_path)
    return s

for _ in range(n_idle):
    try:
        conns.append(connect())
    except OSError as e:
        print("idle connect failed:", e)
        break

def garbage():
    while not stop.is_set():
        try:
            s = connect()
            for payload in (os.urandom(100), b"\0\0\0", b"status " + b"x=" * 3000, b"A" * 70000):
                try:
                    s.send(payload)
                except OSError:
                    pass
            s.close()
        except OSError:
            pass
        time.sleep(0.05)

def slow():
    try:
        s = connect()
        for c in b"status":
            if stop.is_set():
                break
            s.send(bytes([c]))
            time.sleep(0.1)
        conns.append(s)
    except OSError:
        pass

def never_reads():
    try:
        s = connect()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        for _ in range(200):
            s.send(b"list")
        conns.append(s)
    except OSError:
        pass

threads = [threading.Thread(target=f) for f in (garbage, garbage, slow, never_reads)]
for t in threads:
    t.start()
worst, failures, end = 0.0, [], time.time() + seconds
while time.time() < end:
    t0 = time.time()
    r = subprocess.run([ctl, "--socket", sock_path, "status"], capture_output=True, timeout=30)
    dt = time.time() - t0
    worst = max(worst, dt)
    if r.returncode != 0:
        failures.append("status exited %d after %.2fs: %s" % (r.returncode, dt, r.stderr.decode().strip()))
    time.sleep(0.2)
stop.set()
for t in threads:
    t.join()
for s in conns:
    s.close()
print("worst_status_s=%.2f failures=%d idle=%d" % (worst, len(failures), len(conns)))
for f in failures[:5]:
    print(f)
