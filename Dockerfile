# syntax=docker/dockerfile:1
# One image for every Sluice process: `serve`, `worker`, `loader` and
# `broker` are subcommands of the same `sluice` binary (the entrypoint).
#
#   docker build -t sluice:dev .            (or: buildah bud -t sluice:dev .)
#   docker run --rm sluice:dev serve --listen 0.0.0.0:8080 ...
#
# The runtime stage carries only the shared libraries `sluice` links
# (readelf -d build/sluice | grep NEEDED), no compiler, no PostgreSQL server:
# in a cluster the data-plane database is external (SLUICE_DATABASE_URL);
# see README "Running in production".

ARG DEBIAN=debian:bookworm

FROM ${DEBIAN} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libpq-dev libpqxx-dev librdkafka-dev libsodium-dev nlohmann-json3-dev \
      libsimdjson-dev libspdlog-dev libfmt-dev libcli11-dev libcpp-httplib-dev \
      libssl-dev libcurl4-openssl-dev libjemalloc-dev libmariadb-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY src/ src/
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BUILD_TESTS=OFF \
      -DSLUICE_WERROR=OFF \
    && cmake --build /build -j"$(nproc)" --target sluice \
    && strip --strip-debug /build/sluice \
    # The runtime's package list is checked against what the binary needs.
    && readelf -d /build/sluice | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort > /build/needed.txt

FROM ${DEBIAN} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
# One package per NEEDED library of the binary (libc6, libstdc++6 and
# libgcc-s1 are in the base image), plus CA certificates for TLS to Kafka,
# PostgreSQL and the Kubernetes API server.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      ca-certificates \
      libjemalloc2 librdkafka1 librdkafka++1 libmariadb3 libpq5 libcurl4 libssl3 \
      libsimdjson14 libsodium23 libspdlog1.10 libfmt9 libpqxx-6.4 libcpp-httplib0.11 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 sluice \
    && useradd --system --uid 10001 --gid sluice --home-dir /var/lib/sluice \
         --create-home --shell /usr/sbin/nologin sluice
COPY --from=build /build/sluice /usr/local/bin/sluice
COPY --from=build /build/needed.txt /usr/local/share/sluice/needed.txt
# Every library the binary names resolves (fails the build otherwise).
RUN ! ldd /usr/local/bin/sluice | grep -q "not found"
USER 10001:10001
WORKDIR /var/lib/sluice
# serve's API and registry, a worker's metrics, the broker's Kafka port.
EXPOSE 8080 8081 9092
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["--help"]
