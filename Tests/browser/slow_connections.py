#!/usr/bin/python3
"""A local user who tries to block `memo-peer web`: holds COUNT connections to the server
that never finish their request head (one header line every few seconds keeps each one
talking, the way a slowloris client does), reconnecting each one the server closes, for
DURATION seconds, then stops by itself. Run by Tests/MemoCLITests/WebHostileTests.swift as
a second Unix user, on loopback only.

Usage: slow_connections.py PORT COUNT DURATION [spread|ipv6]
  spread: connect from many 127/8 source addresses, not only 127.0.0.1.
  ipv6: connect to ::1 instead of 127.0.0.1.

Prints one JSON line at the end: connections made, closed by the server, open at the end,
the most open at once, and whether any bytes came back (an answer).
"""

import json
import random
import selectors
import socket
import sys
import time

PORT = int(sys.argv[1])
COUNT = min(int(sys.argv[2]), 1000)
DURATION = min(float(sys.argv[3]), 120.0)
MODE = sys.argv[4] if len(sys.argv) > 4 else ""
if MODE not in ("", "spread", "ipv6"):
    sys.exit(f"slow_connections.py: unknown mode {MODE!r}")
SPREAD = MODE == "spread"
if MODE == "ipv6":
    FAMILY, ADDRESS, HOST = socket.AF_INET6, "::1", f"[::1]:{PORT}"
else:
    FAMILY, ADDRESS, HOST = socket.AF_INET, "127.0.0.1", f"127.0.0.1:{PORT}"
LINE_EVERY = 3.0
REOPEN_AFTER = 0.5

selector = selectors.DefaultSelector()
stats = {"made": 0, "closed_by_server": 0, "refused_connect": 0, "answered": 0, "most_open": 0}
slots = [None] * COUNT  # each: [socket, next line time] or None
reopen_at = [0.0] * COUNT


def open_slot(index, now):
    connection = socket.socket(FAMILY, socket.SOCK_STREAM)
    connection.setblocking(False)
    if SPREAD:
        connection.bind((f"127.{random.randint(1, 250)}.{random.randint(1, 250)}.{random.randint(2, 250)}", 0))
    try:
        connection.connect((ADDRESS, PORT))
    except BlockingIOError:
        pass
    except OSError:
        stats["refused_connect"] += 1
        connection.close()
        reopen_at[index] = now + REOPEN_AFTER
        return
    stats["made"] += 1
    slots[index] = [connection, now, 0]
    selector.register(connection, selectors.EVENT_READ, index)


def close_slot(index, now, by_server):
    connection = slots[index][0]
    selector.unregister(connection)
    connection.close()
    slots[index] = None
    reopen_at[index] = now + REOPEN_AFTER
    if by_server:
        stats["closed_by_server"] += 1


def send_next(index, now):
    connection, _, sent = slots[index]
    line = f"GET /api/status HTTP/1.1\r\nHost: {HOST}\r\n" if sent == 0 else f"X-Slow-{sent}: 1\r\n"
    try:
        connection.send(line.encode())
    except BlockingIOError:
        return
    except OSError:
        close_slot(index, now, True)
        return
    slots[index][1] = now + LINE_EVERY
    slots[index][2] = sent + 1


start = time.monotonic()
while True:
    now = time.monotonic()
    if now - start > DURATION:
        break
    for index in range(COUNT):
        if slots[index] is None and now >= reopen_at[index]:
            open_slot(index, now)
        elif slots[index] is not None and now >= slots[index][1]:
            send_next(index, now)
    stats["most_open"] = max(stats["most_open"], sum(1 for slot in slots if slot is not None))
    for key, _ in selector.select(timeout=0.05):
        index = key.data
        if slots[index] is None:
            continue
        try:
            data = key.fileobj.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if data:
            stats["answered"] += 1
        close_slot(index, time.monotonic(), True)

stats["open_at_end"] = sum(1 for slot in slots if slot is not None)
for index in range(COUNT):
    if slots[index] is not None:
        slots[index][0].close()
print(json.dumps(stats, sort_keys=True), flush=True)
