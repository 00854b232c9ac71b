#!/usr/bin/env python3
"""List the scalar fields whose zero the real API server's JSON leaves out.

Go's protobuf marshalling writes every non-pointer scalar (`int32`, `bool`,
...), zero or not; the API server decodes it into the Go struct and its JSON
encoding then leaves the zero out where the field is `omitempty`. A pointer
field is on the wire only when set, and its value is written even if zero.
This script reads the Go types (`types.go` of k8s.io/api and of
k8s.io/apimachinery's meta/v1) and prints, one a line, `package.Message.field`
(the protobuf names) of every non-pointer varint field tagged `omitempty`:
the simulator (`src/proto.rs`) drops those fields' zeros.

    python3 host/sim/proto/omitzero.py API_DIR APIMACHINERY_DIR > host/sim/proto/omitzero.txt
"""
import os
import re
import sys

FIELD = re.compile(r'^\t(\w+)\s+(\S+)\s+`([^`]*)`')
STRUCT = re.compile(r'^type (\w+) struct \{')


def scan(path, package, out):
    struct = None
    for line in open(path, encoding="utf-8"):
        m = STRUCT.match(line)
        if m:
            struct = m.group(1)
            continue
        if line.startswith("}"):
            struct = None
            continue
        m = FIELD.match(line)
        if not struct or not m:
            continue
        _, ty, tags = m.groups()
        js = re.search(r'json:"([^"]*)"', tags)
        pb = re.search(r'protobuf:"varint,\d+,\w+,name=(\w+)', tags)
        if ty.startswith("*") or not js or not pb:
            continue
        if "omitempty" in js.group(1).split(",")[1:]:
            out.add(f"{package}.{struct}.{pb.group(1)}")


def main(api, apimachinery):
    out = set()
    for root, _, files in os.walk(api):
        if "types.go" in files:
            rel = os.path.relpath(root, api).replace(os.sep, ".")
            scan(os.path.join(root, "types.go"), f"k8s.io.api.{rel}", out)
    meta = os.path.join(apimachinery, "pkg", "apis", "meta", "v1", "types.go")
    scan(meta, "k8s.io.apimachinery.pkg.apis.meta.v1", out)
    for name in sorted(out):
        print(name)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
