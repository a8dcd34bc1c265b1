#!/bin/sh
# Make DEST a fresh nng source tree from SRC (nng 1.12.0's .tar.gz or a
# checkout), committed as one git commit, and apply the given patches in
# order with `git am`, as upstream would take them: each must apply
# exactly (no fuzz), or the script stops naming the one that did not.
#
#   tree.sh SRC DEST [PATCH...]
set -eu
src=$1 dest=$2
shift 2
rm -rf "$dest"
mkdir -p "$dest"
if [ -d "$src" ]; then
    # A checkout: its files, without its git metadata or build products.
    (cd "$src" && tar cf - --exclude=.git --exclude=build .) | (cd "$dest" && tar xf -)
else
    tar xzf "$src" -C "$dest" --strip-components=1
fi
g() { git -C "$dest" -c user.name=timewheel -c user.email=timewheel@localhost \
    -c commit.gpgsign=false "$@"; }
g init -q
g add -A
g commit -q -m "nng as extracted from $(basename "$src")"
for p in "$@"; do
    g am -q --keep-cr "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")" || {
        g am --abort 2>/dev/null || true
        echo "tree.sh: $p does not apply to $src with git am" >&2
        exit 1
    }
done
