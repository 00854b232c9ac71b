#!/usr/bin/env python3
"""Extract the Kubernetes API's published protobuf descriptors from a kubectl binary.

Every Go binary that links k8s.io/api and k8s.io/apimachinery registers the
descriptor of each `generated.proto` (a gzipped FileDescriptorProto) with the
protobuf runtime; kubectl links all built-in API groups. This script finds
those gzipped descriptors, keeps the ones named `k8s.io/.../generated.proto`,
drops their imports of other files (gogo.proto, which only declares options)
and writes them as one FileDescriptorSet (field 1, repeated), which the
simulator embeds and decodes on first use (`src/proto.rs`).

    python3 host/sim/proto/extract.py "$(command -v kubectl)" host/sim/proto/k8s.fds
"""
import re
import sys
import zlib


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def fields(buf):
    """The top-level (number, wire type, raw bytes of the whole field) of a message."""
    i, out = 0, []
    while i < len(buf):
        start, tag, shift = i, 0, 0
        while True:
            b = buf[i]
            i += 1
            tag |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            while buf[i] & 0x80:
                i += 1
            i += 1
        elif wire == 2:
            n, shift = 0, 0
            while True:
                b = buf[i]
                i += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            payload = buf[i:i + n]
            i += n
            out.append((num, wire, buf[start:i], payload))
            continue
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        out.append((num, wire, buf[start:i], b""))
    return out


def without_foreign_imports(fd, known):
    """Drop imports of files not extracted (gogo.proto: options only)."""
    kept = []
    for num, _, whole, payload in fields(fd):
        if num in (10, 11):
            raise ValueError("public/weak dependencies are not expected")
        if num == 3 and payload.decode() not in known:
            continue
        kept.append(whole)
    return b"".join(kept)


def main(binary, out):
    data = open(binary, "rb").read()
    files = {}
    for m in re.finditer(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00", data):
        try:
            fd = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[m.start():m.start() + 4_000_000])
        except zlib.error:
            continue
        # FileDescriptorProto field 1 (name) comes first: tag 0x0a, length, name.
        if len(fd) < 2 or fd[0] != 0x0A:
            continue
        name = fd[2:2 + fd[1]].decode("utf-8", "replace")
        if name.startswith("k8s.io/") and name.endswith("/generated.proto"):
            files[name] = fd
    if "k8s.io/api/core/v1/generated.proto" not in files:
        sys.exit(f"{binary}: no Kubernetes descriptors found")
    known = set(files)
    cleaned = [without_foreign_imports(fd, known) for _, fd in sorted(files.items())]
    fds = b"".join(b"\x0a" + varint(len(fd)) + fd for fd in cleaned)
    with open(out, "wb") as f:
        f.write(fds)
    print(f"{len(files)} descriptors, {len(fds)} bytes -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
