#!/bin/sh
# Make DEST a fresh Mosquitto source tree from SRC (a .tar.gz or a checkout)
# and apply the given patches in order, each of which must apply cleanly
# (no fuzz, no offset is tolerated as "clean": patch fails on a reject).
#
#   tree.sh SRC DEST [PATCH...]
set -eu
src=$1 dest=$2
shift 2
rm -rf "$dest"
mkdir -p "$dest"
if [ -d "$src" ]; then
    # A checkout: its files, without its git metadata or build products.
    (cd "$src" && tar cf - --exclude=.git .) | (cd "$dest" && tar xf -)
else
    tar xzf "$src" -C "$dest" --strip-components=1
fi
for p in "$@"; do
    patch -d "$dest" -p1 --quiet --forward --fuzz=0 --no-backup-if-mismatch \
        < "$p" || { echo "tree.sh: $p does not apply cleanly to $src" >&2; exit 1; }
done
