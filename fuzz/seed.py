#!/usr/bin/env python3
"""Seeds each fuzz target's corpus (fuzz/corpus/TARGET) from the specification's examples in
tests/data/spec-examples.json, in the shape that target reads. Safe to run again: a seed is named
by its content."""

import hashlib
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
VECTORS = json.loads((HERE.parent / "tests" / "data" / "spec-examples.json").read_text())


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


for vector in VECTORS:
    request = vector["request"]
    response = vector["response"]
    put("handle", request)
    # framing: the cap byte, no cuts, then the message as a line and as an LSP frame.
    body = request.encode()
    put("framing", bytes([63, 0]) + body + b"\n" + body.replace(b"\n", b" ") + b"\n")
    put("framing", bytes([63, 2, 7, 30]) + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    # http: the method selector (POST), a header block, then the body.
    put("http", b"\x00content-type: application/json\nx-request-id: seed\n\n" + body)
    put("http", b"\x01\n\n" + body)
    if response is not None:
        put("client", json.dumps(response))
    try:
        parsed = json.loads(request)
    except ValueError:
        continue
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if isinstance(message, dict):
            if "params" in message:
                put("params", json.dumps(message["params"]))
            if "id" in message:
                put("id", json.dumps(message["id"]))
for extra in ["1.0", "1e3", "12345678901234567890123", '"a\\u0041"', "-0", "null"]:
    put("id", extra)
put("client", json.dumps([v["response"] for v in VECTORS if isinstance(v["response"], dict)]))
