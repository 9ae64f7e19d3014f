#!/usr/bin/env python3
"""One keep-alive HTTP/1.1 connection posting `add` calls one at a time: PORT N [ignored]."""
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
body = b'{"jsonrpc":"2.0","id":7,"method":"add","params":[7,1]}'
req = b"POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = b""
for i in range(n):
    s.sendall(req)
    while True:
        h = buf.find(b"\r\n\r\n")
        if h >= 0:
            head = buf[:h].lower()
            cl = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            if len(buf) >= h + 4 + cl:
                if i == 0: print(buf[:h+4+cl].decode())
                buf = buf[h+4+cl:]; break
        buf += s.recv(65536)
