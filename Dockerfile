# Multi-stage build: compile with the Rust toolchain, ship a slim runtime image.
# protox compiles the protos in build.rs, so no protoc is needed.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY proto proto
COPY lua lua
COPY src src
RUN cargo build --release --locked --bin dueq

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 dueq
COPY --from=build /src/target/release/dueq /usr/local/bin/dueq
USER dueq
ENV DUEQ_LISTEN=0.0.0.0:50051
EXPOSE 50051
ENTRYPOINT ["/usr/local/bin/dueq"]
CMD ["serve"]
