#!/usr/bin/env python3
"""One WebSocket sending `add` calls, DEPTH in flight at a time: PORT N DEPTH."""
import socket, sys, os, base64, struct
port, n, depth = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /ws HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: %s\r\nsec-websocket-version: 13\r\n\r\n" % key).encode())
buf=b""
while b"\r\n\r\n" not in buf: buf += s.recv(4096)
buf = buf[buf.find(b"\r\n\r\n")+4:]
def frame(payload):
    mask = os.urandom(4); m = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x81, 0x80 | len(payload)]) + mask + m
def read_frame():
    """The payload of the next frame the server sends (unmasked, under 64 KiB)."""
    global buf
    while True:
        if len(buf) >= 2:
            ln, off = buf[1] & 0x7F, 2
            if ln == 126 and len(buf) >= 4:
                ln, off = struct.unpack(">H", buf[2:4])[0], 4
            if ln != 126 and len(buf) >= off + ln:
                payload, buf = buf[off:off + ln], buf[off + ln:]
                return payload
        buf += s.recv(65536)
i = 0; first=None
while i < n:
    k = min(depth, n - i)
    s.sendall(b"".join(frame(b'{"jsonrpc":"2.0","id":%d,"method":"add","params":[%d,1]}' % (i+j, i+j)) for j in range(k)))
    for j in range(k):
        p = read_frame()
        if first is None: first = p; print(p.decode())
    i += k
