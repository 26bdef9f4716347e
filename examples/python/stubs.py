#!/usr/bin/env python3
"""dueq's Python gRPC stubs, generated from the repository's proto/ by grpcio-tools.

The examples call load() at start-up: it runs the generation into a fresh temporary
directory and imports from there, so nothing generated is checked in and the stubs
always match proto/. To generate them once for your own project instead:

    python3 examples/python/stubs.py OUT_DIR      # then: from dueq.v1 import jobs_pb2

which runs the same command as

    python3 -m grpc_tools.protoc -I proto -I <grpc_tools>/_proto \\
        --python_out=OUT_DIR --pyi_out=OUT_DIR --grpc_python_out=OUT_DIR \\
        dueq/v1/admin.proto dueq/v1/jobs.proto dueq/v1/queue.proto
"""

import os
import sys
import tempfile

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")


def generate(out):
    """Writes the *_pb2.py, *_pb2.pyi and *_pb2_grpc.py modules of proto/ into `out`."""
    import grpc_tools
    from grpc_tools import protoc

    # google/protobuf/*.proto ship inside grpcio-tools.
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    protos = sorted(
        os.path.join("dueq", "v1", name)
        for name in os.listdir(os.path.join(PROTO_DIR, "dueq", "v1"))
        if name.endswith(".proto")
    )
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
    ]
    if protoc.main(args + protos) != 0:
        sys.exit("could not generate the gRPC stubs from proto/")


def load():
    """Generates the stubs into a temporary directory and makes `dueq.v1` importable."""
    out = tempfile.mkdtemp(prefix="dueq-stubs-")
    generate(out)
    sys.path.insert(0, out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT_DIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    generate(sys.argv[1])
