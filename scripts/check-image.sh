#!/usr/bin/env bash
# Checks an image built by scripts/build-image.sh without running a container:
# its configuration (non-root user, entrypoint, labels), that the binary inside is
# byte for byte dist/hmssync, a static CGO-free build carrying the commit, that
# there is no shell, and that the image stays small.
#   scripts/check-image.sh localhost/hmssync:dev
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:?usage: check-image.sh IMAGE}
max_bytes=${MAX_IMAGE_BYTES:-40000000} # the binary is ~26 MB; a base or a stray file beyond that is a mistake

fail() { echo "check-image: $image: $*" >&2; exit 1; }
field() { podman image inspect "$image" --format "$1"; }

user=$(field '{{.Config.User}}')
case $user in "" | 0 | 0:* | root | root:*) fail "runs as root (USER '$user'); the Dockerfile must set USER 65532:65532" ;; esac
entry=$(field '{{json .Config.Entrypoint}}')
[ "$entry" = '["/usr/local/bin/hmssync"]' ] || fail "entrypoint $entry, want [\"/usr/local/bin/hmssync\"]"

want_commit=$(dist/hmssync version | sed -n 's/^commit \([^ ]*\).*/\1/p')
[ -n "$want_commit" ] && [ "$want_commit" != unknown ] || fail "dist/hmssync has no commit linked in; build it with scripts/build-image.sh"
rev=$(field '{{index .Config.Labels "org.opencontainers.image.revision"}}')
[ "$rev" = "$want_commit" ] || fail "label org.opencontainers.image.revision=$rev, want the binary's commit $want_commit"
for l in title source licenses version; do
	v=$(field "{{index .Config.Labels \"org.opencontainers.image.$l\"}}")
	[ -n "$v" ] && [ "$v" != "<no value>" ] || fail "label org.opencontainers.image.$l is missing"
done

size=$(field '{{.Size}}')
[ "$size" -le "$max_bytes" ] || fail "is $size bytes, more than $max_bytes"

# The image as a consumer gets it: saved, its layers unpacked in order (no mount, so this works
# rootless too).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
podman save --quiet --format docker-archive -o "$work/image.tar" "$image"
mkdir "$work/archive" "$work/root"
tar -xf "$work/image.tar" -C "$work/archive"
layers=$(grep -o '[0-9a-f]\{64\}\.tar' "$work/archive/manifest.json") || fail "its saved manifest lists no layers"
for l in $layers; do tar -xf "$work/archive/$l" -C "$work/root"; done
root=$work/root
inside=$root/usr/local/bin/hmssync
[ -f "$inside" ] || fail "has no /usr/local/bin/hmssync"
a=$(sha256sum <"$inside" | cut -d' ' -f1)
b=$(sha256sum <dist/hmssync | cut -d' ' -f1)
[ "$a" = "$b" ] || fail "its binary (sha256 $a) is not dist/hmssync ($b)"
# Output captured before grep: under pipefail, grep -q leaving early can kill the writer with
# SIGPIPE and fail a check that matched.
buildinfo=$(go version -m "$inside")
grep -q 'CGO_ENABLED=0' <<<"$buildinfo" || fail "its binary was built with cgo; want CGO_ENABLED=0 (a static binary)"
[ -r "$root/etc/ssl/certs/ca-certificates.crt" ] || fail "has no CA certificates at /etc/ssl/certs/ca-certificates.crt"
[ ! -e "$root/bin/sh" ] || echo "check-image: note: $image has /bin/sh (from its base); hmssync does not need one"
# The binary inside, run on this host (not in a container), reports the commit.
reported=$("$inside" version)
grep -qx "commit $want_commit" <<<"$reported" || fail "its binary does not report commit $want_commit"
echo "check-image: $image: user $user, entrypoint $entry, commit $want_commit, $size bytes, binary sha256 $a: ok"
