#!/usr/bin/env bash
# The contract checks .ci/run makes (after `npm ci --prefix tools/buf`):
#   buf lint       proto/ keeps buf's STANDARD rules (exceptions in buf.yaml, each
#                  with its reason);
#   buf breaking   proto/ is compatible with the last released contract, the newest
#                  image in proto/released/ (a release adds one:
#                  tools/buf/node_modules/.bin/buf build --exclude-source-info -o proto/released/vX.Y.binpb);
#   a self-check   that `buf breaking` does fail on a break: a copy of proto/ with
#                  renumbered fields must be refused.
set -euo pipefail
cd "$(dirname "$0")/../.."

buf=tools/buf/node_modules/.bin/buf
released=$(ls proto/released/*.binpb | sort -V | tail -n 1)

echo "buf $("$buf" --version): lint"
"$buf" lint
echo "buf breaking --against $released"
"$buf" breaking --against "$released"

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r proto buf.yaml "$copy/"
sed -i 's/string namespace = 1;/string namespace = 99;/' "$copy/proto/dueq/v1/admin.proto"
if found=$(cd "$copy" && "$OLDPWD/$buf" breaking --against "$OLDPWD/$released" 2>&1); then
  echo "self-check failed: buf breaking accepted renumbered fields" >&2
  exit 1
fi
case "$found" in
  *'"namespace"'*) echo "self-check: buf breaking refuses a renumbered field, as it must" ;;
  *) echo "self-check failed: buf breaking failed for another reason:" >&2; echo "$found" >&2; exit 1 ;;
esac
