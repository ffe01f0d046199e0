#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A collector for tests: an HTTP server on 127.0.0.1 that accepts PUT.

put-server.py ROOT PORT LOG [TOKEN]
Each PUT of /a/b is stored as ROOT/a/b (written to a temporary name and
renamed once the whole body arrived, so an upload cut short leaves
nothing) and appended to LOG as "PATH SIZE SHA256" after the rename. With
TOKEN, a request without "Authorization: Bearer TOKEN" gets 401. A PUT
whose path holds one of the comma-separated strings of the environment
variable PUT_REFUSE gets 413 (Payload Too Large), a refusal for good.
"""
import hashlib
import http.server
import os
import sys

root, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
token = sys.argv[4] if len(sys.argv) > 4 else None
refuse = [r for r in os.environ.get("PUT_REFUSE", "").split(",") if r]


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1: answers "Expect: 100-continue" as nginx does
    protocol_version = "HTTP/1.1"

    def do_PUT(self):
        if token and self.headers.get("Authorization") != "Bearer " + token:
            self.send_error(401)
            return
        if any(r in self.path for r in refuse):
            left = int(self.headers.get("Content-Length", "0"))
            while left > 0:
                data = self.rfile.read(min(left, 65536))
                if not data:
                    break
                left -= len(data)
            with open(log, "a") as f:
                f.write("%s refused\n" % self.path.lstrip("/"))
            self.send_error(413)
            return
        rel = os.path.normpath(self.path.lstrip("/"))
        if rel.startswith("..") or "Content-Length" not in self.headers:
            self.send_error(400)
            return
        dest = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        left = int(self.headers["Content-Length"])
        tmp = dest + ".part"
        h = hashlib.sha256()
        with open(tmp, "wb") as f:
            while left > 0:
                data = self.rfile.read(min(left, 65536))
                if not data:
                    os.unlink(tmp)
                    return
                f.write(data)
                h.update(data)
                left -= len(data)
        size = os.path.getsize(tmp)
        os.rename(tmp, dest)
        with open(log, "a") as f:
            f.write("%s %d %s\n" % (rel, size, h.hexdigest()))
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, fmt, *args):
        pass


http.server.HTTPServer.allow_reuse_address = True
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
