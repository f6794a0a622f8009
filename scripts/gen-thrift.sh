#!/usr/bin/env bash
# Regenerates the Go code of hmssync's minimal Hive Metastore IDL
# (hms/thrift/hive_metastore.thrift) into hms/internal/gen/hmsthrift.
#
#   scripts/gen-thrift.sh          regenerate in place
#   scripts/gen-thrift.sh --check  exit 1 if the committed code differs from a fresh generation
#
# Needs Apache Thrift's compiler 0.17.0 (Debian: apt-get install thrift-compiler), the
# version go.mod pins for the runtime library; another compiler version is refused
# because its output differs.
set -euo pipefail
cd "$(dirname "$0")/.."

want="0.17.0"
idl="hms/thrift/hive_metastore.thrift"
dest="hms/internal/gen/hmsthrift"

check=false
case "${1:-}" in
	"") ;;
	--check) check=true ;;
	*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v thrift >/dev/null 2>&1; then
	echo "gen-thrift: the thrift compiler is not installed (Debian: apt-get install -y thrift-compiler)" >&2
	exit 1
fi
have=$(thrift --version | awk '{print $3}')
if [ "$have" != "$want" ]; then
	echo "gen-thrift: thrift $have found, $want needed (it must match github.com/apache/thrift in go.mod)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
thrift -gen go:package_prefix=github.com/hmssync/hmssync/hms/internal/gen/,skip_remote -out "$tmp" "$idl"
gofmt -w "$tmp/hmsthrift"

if $check; then
	if ! diff -ru "$dest" "$tmp/hmsthrift"; then
		echo "gen-thrift: $dest is not what $idl generates; run scripts/gen-thrift.sh and commit" >&2
		exit 1
	fi
	echo "gen-thrift: $dest is current"
	exit 0
fi

mkdir -p "$dest"
rm -f "$dest"/*.go
cp "$tmp"/hmsthrift/*.go "$dest"/
echo "gen-thrift: regenerated $dest from $idl"
