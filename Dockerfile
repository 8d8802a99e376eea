# karpsim for `karpsim sweep job`: the binary at /usr/local/bin/karpsim and
# the bundled scenarios under the working folder /karpsim, where the Jobs'
# sweep paths and the results volume (/karpsim/results) are.
#   docker build -t registry.example.com/karpsim:0.1 .
# Built without the `aws` feature: `pricing refresh` is not needed in a
# cluster, and the image builds in a fraction of the time.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY src src
COPY benches benches
COPY tests tests
COPY pricing-snapshots pricing-snapshots
COPY scenarios scenarios
RUN cargo build --release --locked --no-default-features --bin karpsim

FROM debian:bookworm-slim
COPY --from=build /src/target/release/karpsim /usr/local/bin/karpsim
WORKDIR /karpsim
COPY scenarios scenarios
CMD ["karpsim", "--help"]
