# The hmssync image: one static binary, a non-root user, CA certificates, no shell.
#
# The binary is built outside the image (scripts/build-image.sh: CGO_ENABLED=0,
# -trimpath, version and commit linked in) so that the image builds offline with
# podman, buildah or docker and contains exactly the binary that was tested:
#
#   scripts/build-image.sh                                   # distroless static base
#   scripts/build-image.sh --build-arg BASE=scratch          # no registry needed
#
# By hand: CGO_ENABLED=0 go build -trimpath -o dist/hmssync ./cmd/hmssync &&
#          cp /etc/ssl/certs/ca-certificates.crt dist/ && docker build .
ARG BASE=gcr.io/distroless/static-debian12:nonroot
FROM ${BASE}
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="hmssync" \
      org.opencontainers.image.description="Keeps Apache Doris frontends in step with a Hive Metastore" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/hmssync/hmssync" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
# distroless already has these certificates; scratch has none, and TLS to etcd
# and to the metastore needs them.
COPY dist/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY dist/hmssync /usr/local/bin/hmssync
# 65532 is distroless's "nonroot"; numeric so that it also works on scratch,
# which has no /etc/passwd.
USER 65532:65532
EXPOSE 9108
ENTRYPOINT ["/usr/local/bin/hmssync"]
CMD ["run", "--config", "/etc/hmssync/sidecar.yaml"]
