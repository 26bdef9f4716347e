//! Generates the tonic client from the repository's `proto/` (the contract) with
//! protox (pure Rust), as the service's own build.rs does: no system `protoc`.

use std::{fs, path::Path};

/// The protos, relative to this crate: they share package `dueq.v1`.
const PROTO_ROOT: &str = "../../proto";
const PROTO_DIR: &str = "../../proto/dueq/v1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    let mut protos: Vec<String> = fs::read_dir(PROTO_DIR)?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .filter_map(|path| {
            let relative = path.strip_prefix(Path::new(PROTO_ROOT)).ok()?;
            Some(relative.to_string_lossy().into_owned())
        })
        .collect();
    // A stable order keeps the generated code reproducible.
    protos.sort();
    for proto in &protos {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let mut compiler = protox::Compiler::new([PROTO_ROOT])?;
    compiler.include_imports(true);
    for proto in &protos {
        compiler.open_file(proto)?;
    }
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .emit_rerun_if_changed(false)
        .compile_fds(compiler.file_descriptor_set())?;
    Ok(())
}
