#!/usr/bin/env bash
# Builds the hmssync image with podman (or buildah, or docker): first the static
# binary into dist/, with the version and commit linked in, then the image from
# the root Dockerfile. Extra arguments go to the image build, e.g.
# --build-arg BASE=scratch to build without a registry.
#   IMAGE=localhost/hmssync:dev VERSION=v0.1.0 scripts/build-image.sh
set -euo pipefail
cd "$(dirname "$0")/.."

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit-dirty"; fi
version=${VERSION:-$(git describe --tags --always 2>/dev/null || echo dev)}
image=${IMAGE:-localhost/hmssync:$version}

mkdir -p dist
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
	-o dist/hmssync ./cmd/hmssync
ca=/etc/ssl/certs/ca-certificates.crt
if [ ! -r "$ca" ]; then
	echo "build-image: $ca is missing; install it (apt-get install ca-certificates)" >&2
	exit 1
fi
cp "$ca" dist/ca-certificates.crt

for tool in podman buildah docker; do
	if command -v "$tool" >/dev/null 2>&1; then break; fi
	tool=""
done
if [ -z "$tool" ]; then
	echo "build-image: none of podman, buildah, docker is installed (apt-get install podman)" >&2
	exit 1
fi
case $tool in
buildah) build=(buildah bud) ;;
*) build=("$tool" build) ;;
esac
"${build[@]}" --build-arg VERSION="$version" --build-arg COMMIT="$commit" -t "$image" "$@" .
echo "$image"
