#!/usr/bin/env python3
"""Fails when a locked dependency declares a newer rust-version than dueq's Cargo.toml.

Reads `cargo metadata --locked` (every package of Cargo.lock, on every platform), so a
dependency bump that raises the minimum Rust cannot land while the README and
Cargo.toml still promise an older one.
"""
import json
import subprocess
import sys


def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--locked", "--format-version", "1"],
            check=True,
            stdout=subprocess.PIPE,
        ).stdout
    )
    members = set(metadata["workspace_members"])
    ours = [p for p in metadata["packages"] if p["id"] in members]
    declared = {p["name"]: p.get("rust_version") for p in ours}
    if not all(declared.values()):
        sys.exit(f"Cargo.toml declares no rust-version for: {declared}")
    floor = min(version(v) for v in declared.values())
    newer = sorted(
        (version(p["rust_version"]), p["name"], p["version"])
        for p in metadata["packages"]
        if p["id"] not in members
        and p.get("rust_version")
        and version(p["rust_version"]) > floor
    )
    if newer:
        needed = ".".join(str(n) for n in newer[-1][0])
        lines = [f"  {name} {ver} needs Rust {'.'.join(map(str, v))}" for v, name, ver in newer]
        sys.exit(
            "locked dependencies need a newer Rust than Cargo.toml's rust-version "
            f"({'.'.join(map(str, floor))}):\n" + "\n".join(lines)
            + f"\nraise rust-version to {needed} (Cargo.toml and the README's quick start),"
            " or lock older versions of these crates"
        )
    top = max(version(p["rust_version"]) for p in metadata["packages"] if p.get("rust_version"))
    print(f"rust-version {'.'.join(map(str, floor))} covers every locked dependency "
          f"(the newest needs {'.'.join(map(str, top))})")


if __name__ == "__main__":
    main()
