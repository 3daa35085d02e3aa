#!/usr/bin/python3
"""A page another local user serves on another loopback port, as in issue 38: run as that
user (runuser) by other_user_test.py. Cookies do not keep ports apart, so the person's
browser sends it memo-peer's session cookie, which it writes to FOLDER/cookies.log; and its
answer sets a cookie of the same name for Path=/api (a shadow), which the browser then sends
to memo-peer beside the real one.

Usage: other_port_server.py FOLDER MEMO_PEER_PORT. Writes FOLDER/port once it listens (on
127.0.0.1 only); serves until killed, at most 300 s.
"""

import http.server
import os
import signal
import sys

FOLDER = sys.argv[1]
TARGET = sys.argv[2]
signal.alarm(300)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the name http.server calls)
        with open(os.path.join(FOLDER, "cookies.log"), "a", encoding="utf-8") as log:
            log.write((self.headers.get("Cookie") or "") + "\n")
        body = b"<!doctype html><title>another user's page</title><p>a page on another port</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", f"memo_peer_session_{TARGET}=shadow-from-another-port; Path=/api")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(os.path.join(FOLDER, "port.tmp"), "w", encoding="utf-8") as port_file:
    port_file.write(str(server.server_address[1]))
os.rename(os.path.join(FOLDER, "port.tmp"), os.path.join(FOLDER, "port"))
server.serve_forever()
