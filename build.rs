//! Generates the gRPC code from `proto/` with protox (pure Rust), so building dueq
//! needs nothing but cargo: no system `protoc`.

use std::{env, fs, path::PathBuf};

use prost::Message;

/// Every `.proto` under this directory is compiled; they share package `dueq.v1`.
const PROTO_DIR: &str = "proto/dueq/v1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // tonic-prost-build's own rerun-if-changed does nothing when it is handed a
    // descriptor set, so say which inputs matter ourselves.
    println!("cargo:rerun-if-changed=proto");
    let mut protos: Vec<String> = fs::read_dir(PROTO_DIR)?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    // A stable order keeps the descriptor set, and so the build, reproducible.
    protos.sort();
    for proto in &protos {
        println!("cargo:rerun-if-changed={proto}");
    }

    let mut compiler = protox::Compiler::new(["proto"])?;
    // Reflection must be able to resolve google/protobuf/*.proto for grpcurl.
    compiler.include_imports(true).include_source_info(true);
    for proto in &protos {
        compiler.open_file(proto.trim_start_matches("proto/"))?;
    }
    let fds = compiler.file_descriptor_set();

    // compile_fds does not write the descriptor set that reflection serves: write it.
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out_dir.join("dueq_descriptor.bin"), fds.encode_to_vec())?;

    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .emit_rerun_if_changed(false)
        .compile_fds(fds)?;
    Ok(())
}
