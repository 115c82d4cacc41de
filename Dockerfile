# warren in a container: the statically linked musl binary that scripts/release
# builds, alone in an empty image, run as a non-root user.
#
#   docker build -t warren .
#   docker run --rm -v "$PWD:/work" warren validate warren.yaml
#   docker run --rm -e WARREN_URL -e WARREN_USER -e WARREN_PASSWORD -v "$PWD:/work" warren plan warren.yaml
#
# The build stage runs scripts/release, the one recipe for the release binary (the
# musl target, musl-gcc for the C code, the static-linking and resolver checks).
# The final image needs nothing else: musl is linked in, TLS roots are bundled
# (rustls), and its resolver reads the /etc/hosts and /etc/resolv.conf that the
# container runtime provides. scripts/docker-build-test builds it and runs it.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY examples ./examples
COPY schemas ./schemas
COPY scripts ./scripts
RUN RELEASE_DIR=/out scripts/release \
    && mv /out/warren-*-x86_64-linux /out/warren \
    && echo 'warren:x:10001:10001:warren:/work:/sbin/nologin' >/out/passwd \
    && echo 'warren:x:10001:' >/out/group \
    && mkdir -p /out/work

FROM scratch
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build --chown=10001:10001 /out/work /work
COPY --from=build /out/warren /usr/local/bin/warren
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/warren"]
CMD ["--help"]
