#!/usr/bin/env python3
"""Regenerates src/dueq/v1/ (the protobuf and gRPC modules) from the repository's
proto/ with grpcio-tools:

    python3 clients/python/scripts/generate.py          # rewrite src/dueq/v1/
    python3 clients/python/scripts/generate.py --check  # exit 1 if they differ

The generated modules import each other as `from dueq.v1 import jobs_pb2`, which
resolves because they live in the `dueq.v1` package. `src/dueq/v1/__init__.py` is
hand-written and left alone.
"""

import argparse
import filecmp
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.normpath(os.path.join(HERE, "..", "src", "dueq", "v1"))
PROTO = os.path.normpath(os.path.join(HERE, "..", "..", "..", "proto"))
# What protoc writes, per proto file.
SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def generate(out):
    """Writes the modules of every proto/dueq/v1/*.proto into `out`/dueq/v1/."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    protos = sorted(
        os.path.join("dueq", "v1", name)
        for name in os.listdir(os.path.join(PROTO, "dueq", "v1"))
        if name.endswith(".proto")
    )
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
    ]
    if protoc.main(args + protos) != 0:
        sys.exit("generate.py: protoc failed on proto/dueq/v1")
    return os.path.join(out, "dueq", "v1")


def generated_names(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(SUFFIXES))


def differences(fresh):
    """The file names that differ between `fresh` and the committed package."""
    committed = generated_names(PACKAGE)
    new = generated_names(fresh)
    differ = sorted(set(committed) ^ set(new))
    for name in set(committed) & set(new):
        if not filecmp.cmp(os.path.join(PACKAGE, name), os.path.join(fresh, name), shallow=False):
            differ.append(name)
    return sorted(differ)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dueq-gen-") as tmp:
        fresh = generate(tmp)
        if opts.check:
            differ = differences(fresh)
            if differ:
                sys.exit(
                    "generate.py --check: src/dueq/v1 is not what proto/ generates: "
                    + ", ".join(differ)
                    + " (run clients/python/scripts/generate.py)"
                )
            return
        for name in generated_names(PACKAGE):
            os.remove(os.path.join(PACKAGE, name))
        for name in generated_names(fresh):
            shutil.copyfile(os.path.join(fresh, name), os.path.join(PACKAGE, name))


if __name__ == "__main__":
    main()
