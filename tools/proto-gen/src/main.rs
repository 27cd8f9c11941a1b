//! Regenerates the gRPC binding's code from `host/proto` without `protoc`:
//! protox compiles the files, prost and tonic generate the messages and the
//! service, pbjson their ProtoJSON serde impls.
//!
//! Usage (from the repository root):
//!   pip install googleapis-common-protos   # google/api and google/rpc .proto files
//!   cargo run --manifest-path tools/proto-gen/Cargo.toml -- "$(python3 -c \
//!     'import google.api, os; print(os.path.dirname(os.path.dirname(google.api.__path__[0])))')"
//!
//! The argument is the folder holding `google/api/*.proto` and `google/rpc/*.proto`.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let googleapis = std::env::args()
        .nth(1)
        .ok_or("usage: proto-gen <folder holding google/api and google/rpc>")?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let proto = root.join("host/proto");
    let out = root.join("host/src/server/grpc/generated");
    std::fs::create_dir_all(&out)?;
    let files = protox::compile(
        [
            "lf/a2a/v1/a2a.proto",
            "google/rpc/status.proto",
            "google/rpc/error_details.proto",
        ],
        [proto.clone(), PathBuf::from(&googleapis)],
    )?;
    let descriptors = files.encode_to_vec();
    let mut config = prost_build::Config::new();
    config
        .out_dir(&out)
        // Struct, Value, Timestamp, Empty with ProtoJSON serde impls.
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types")
        // google.api's annotations are options a2a.proto needs to compile,
        // never fields: nothing of them is generated.
        .extern_path(".google.api", "::unused")
        // google.rpc's comments hold proto and JSON snippets in code blocks,
        // which rustdoc would compile as doctests.
        .disable_comments([".google.rpc"]);
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // The client is generic over its transport: the tests bring one.
        .build_transport(false)
        .out_dir(&out)
        .compile_fds_with_config(files, config)?;
    pbjson_build::Builder::new()
        .register_descriptors(&descriptors)?
        .out_dir(&out)
        .build(&[".lf.a2a.v1"])?;
    println!("generated into {}", out.display());
    Ok(())
}
