# Multi-stage build: compile with the Rust toolchain, ship a slim runtime image.
# protox compiles the protos in build.rs, so no protoc is needed.
# Base images pinned by digest: a build uses the bytes it was tested with. To move
# on, resolve the tags again (`docker buildx imagetools inspect rust:1.95-bookworm`).
FROM rust:1.95-bookworm@sha256:6258907abe69656e41cd992e0b705cdcfabcbbe3db374f92ed2d47121282d4a1 AS build
WORKDIR /src
# The image's binary carries symbols (backtraces name functions) but no debug info:
# 12 MB, where the line tables Cargo.toml keeps for local profiling make 51 MB
# (`cargo build --release --bin dueq`, then `strip --strip-debug`). Set before both
# builds so the dependency layer matches the final build.
ENV CARGO_PROFILE_RELEASE_DEBUG=false \
    CARGO_PROFILE_RELEASE_STRIP=debuginfo

# The dependencies first, in a layer of their own: built against stub sources, so a
# change to dueq's code (or protos, or Lua) reuses this layer and rebuilds only the
# dueq crate. The stubs name every target Cargo.toml declares (else cargo refuses the
# manifest); the stub build.rs still makes cargo build the build-dependencies.
COPY Cargo.toml Cargo.lock ./
# The client examples (examples/rust) are left out of the context; their stubs stay
# for the final build, which builds only the dueq binary.
RUN mkdir -p src/bin/dueq-bench examples/rust \
 && for example in producer worker schedule_worker; do \
      echo 'fn main() {}' > "examples/rust/$example.rs"; done \
 && echo 'fn main() {}' > build.rs \
 && echo 'fn main() {}' > src/main.rs \
 && echo 'fn main() {}' > src/bin/dueq-bench/main.rs \
 && touch src/lib.rs \
 && cargo build --release --locked --bin dueq \
 && rm -rf build.rs src

COPY build.rs ./
COPY proto proto
COPY lua lua
COPY src src
# COPY keeps the files' modification times, which may be older than the stub build's
# outputs; then cargo would take the stub dueq as up to date. Touching the crate's
# roots makes it rebuild dueq (and only dueq).
RUN touch build.rs src/lib.rs src/main.rs \
 && cargo build --release --locked --bin dueq

FROM debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin dueq
COPY --from=build /src/target/release/dueq /usr/local/bin/dueq
# Not root: the service needs no privilege (it listens above 1024 and writes nothing).
USER 10001
# A public address needs DUEQ_AUTH_FILE (or DUEQ_ALLOW_UNAUTHENTICATED=true): without
# either dueq refuses to start (docs/security.md; docker-compose.yml ships one).
ENV DUEQ_LISTEN=0.0.0.0:50051
EXPOSE 50051
# `dueq health` asks the service's gRPC health endpoint on 127.0.0.1:50051 and exits
# 0 only while it answers SERVING (its Redis reachable, its scripts loaded). Pass
# `--addr` too if DUEQ_LISTEN moves the port; with DUEQ_TLS_CERT, override it with
# `--addr https://127.0.0.1:50051 --tls-ca … [--tls-server-name …]` (docs/cli.md).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/dueq", "health", "--timeout", "3s"]
ENTRYPOINT ["/usr/local/bin/dueq"]
CMD ["serve"]
