#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A collector for tests: an HTTP server on 127.0.0.1 that accepts PUT.

put-server.py ROOT PORT LOG [TOKEN]
Each PUT of /a/b is stored as ROOT/a/b (written to a temporary name and
renamed once the whole body arrived, so an upload cut short leaves
nothing) and appended to LOG as "PATH SIZE SHA256" after the rename. With
TOKEN, a request without "Authorization: Bearer TOKEN" gets 401. A PUT
whose path holds one of the comma-separated strings of the environment
variable PUT_REFUSE gets 413 (Payload Too Large), a refusal for good; so
does one whose body is larger than PUT_MAX_BODY bytes (as nginx's
client_max_body_size: 1m by default). While the file PUT_FAIL_FILE exists,
every PUT gets 503 (Service Unavailable). Refusals are logged as
"PATH CODE".
"""
import hashlib
import http.server
import os
import sys

root, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
token = sys.argv[4] if len(sys.argv) > 4 else None
refuse = [r for r in os.environ.get("PUT_REFUSE", "").split(",") if r]
max_body = int(os.environ.get("PUT_MAX_BODY", "0") or 0)
fail_file = os.environ.get("PUT_FAIL_FILE", "")


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1: answers "Expect: 100-continue" as nginx does
    protocol_version = "HTTP/1.1"

    def do_PUT(self):
        if token and self.headers.get("Authorization") != "Bearer " + token:
            self.send_error(401)
            return
        length = int(self.headers.get("Content-Length", "0"))
        if fail_file and os.path.exists(fail_file):
            self.refuse(503, length)
            return
        if any(r in self.path for r in refuse) or (max_body and length > max_body):
            self.refuse(413, length)
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

    def refuse(self, code, left):
        """Answer code after reading the body, and log it."""
        while left > 0:
            data = self.rfile.read(min(left, 65536))
            if not data:
                break
            left -= len(data)
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.path.lstrip("/"), "refused" if code == 413 else code))
        self.send_error(code)

    def log_message(self, fmt, *args):
        pass


http.server.HTTPServer.allow_reuse_address = True
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
