# The tabwire hub in hosted mode, in a small Debian image.
#
#   docker build -t tabwire-hub .
#   docker run --rm -v tabwire:/var/lib/tabwire tabwire-hub \
#       token issue --auth-dir /var/lib/tabwire/auth --account alice --role agent
#   docker run -d -v tabwire:/var/lib/tabwire -p 127.0.0.1:17841:17841 \
#       -e TABWIRE_PUBLIC_ORIGIN=https://tabwire.example.com tabwire-hub
#
# Put a TLS proxy in front (deploy/compose.yaml does). HOSTING.md has the walk-through.

FROM rust:1-slim-bookworm AS build
WORKDIR /src

# Cargo reads every workspace member's manifest before it builds one package, so all members
# come in; only the hub is compiled. The extension's built wasm and the tests' fixtures are not
# needed, and .dockerignore keeps build output out.
COPY Cargo.toml Cargo.lock ./
COPY protocol protocol
COPY hub hub
COPY mcp-shim mcp-shim
COPY extension-wasm extension-wasm
COPY tests tests

# No cache mounts, so any builder works (Debian's docker.io 20.10 without BuildKit too); a
# rebuild compiles everything again, which takes a few minutes.
RUN cargo build --release --locked -p tabwire-hub --bin tabwire-hub \
    && install -D -m 0755 target/release/tabwire-hub /out/tabwire-hub

FROM debian:bookworm-slim

# A fixed, unprivileged user. The auth directory belongs to it and is private (0700), as the
# hub expects. A named volume mounted on /var/lib/tabwire starts as a copy of this, owner
# included; for a bind mount, chown the host directory to 10001 first.
RUN groupadd --system --gid 10001 tabwire \
    && useradd --system --uid 10001 --gid tabwire --home-dir /var/lib/tabwire \
        --shell /usr/sbin/nologin tabwire \
    && install -d -o tabwire -g tabwire -m 0700 /var/lib/tabwire /var/lib/tabwire/auth

COPY --from=build /out/tabwire-hub /usr/local/bin/tabwire-hub

USER tabwire
VOLUME /var/lib/tabwire

# Hosted mode (an auth directory is given), listening on every interface of the container: the
# proxy reaches it over the container network. Publish the port on the host's loopback only, or
# not at all. TABWIRE_PUBLIC_ORIGIN has no default: the hub refuses to start without it.
ENV TABWIRE_HOST=0.0.0.0 \
    TABWIRE_PORT=17841 \
    TABWIRE_AUTH_DIR=/var/lib/tabwire/auth
EXPOSE 17841

# The slim image has no curl or wget, and the hub has no probe command. bash (always in Debian)
# can open a TCP socket itself, which is all a GET /healthz needs.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${TABWIRE_PORT:-17841} && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && IFS= read -r status <&3 && [[ $status == 'HTTP/1.1 200'* ]]"]

ENTRYPOINT ["/usr/local/bin/tabwire-hub"]
