# The volcano-rs image: one binary, `volcano`, whose subcommands are the scheduler
# (`volcano scheduler`), the controllers (`volcano controller-manager`) and the admission
# webhooks (`volcano webhook-manager`); see deploy/. It is built without the default feature
# `local-cluster`: the embedded API server of `volcano up` has no business on a cluster.
#
#   docker build -t ghcr.io/volcano-rs/volcano:0.1.0 .

# Build stage. Debian bookworm, so the binary links against the glibc of the runtime image.
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# The caches keep the registry and the target directory between builds; the binary is copied
# out of the cached target directory, which does not survive the RUN step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p volcano-cli --bin volcano --no-default-features \
    && cp target/release/volcano /usr/local/bin/volcano

# Runtime stage: glibc and libgcc only, no shell, running as the unprivileged user 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /usr/local/bin/volcano /usr/local/bin/volcano
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/volcano"]
