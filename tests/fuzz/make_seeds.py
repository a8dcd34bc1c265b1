#!/usr/bin/env python3
"""Write the hand-made seeds of the fuzz corpus (tests/fuzz/corpus/seed-*).

Each seed is a well-formed input for tests/fuzz/driver.c: one layout, a start
time, then a mix of operations in the proportions a real embedder would use
(mostly schedules, re-arms and small advances, some programmed callbacks that
re-arm or cancel, a few huge and bounded advances). The fuzzer starts from
these and `make fuzz-merge` adds what it finds that covers something new.
Deterministic: rerunning rewrites the same files.
"""
import os
import random
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def num(v):
    """A number as the driver reads it: a length byte and little-endian."""
    b = []
    while v:
        b.append(v & 0xFF)
        v >>= 8
    return bytes([len(b)] + b)


def tick(rng):
    """A tick as custom_layout() reads it: a kind byte (a few ns, 1 ms, the
    edge of 64-bit time, any number) and a number."""
    kind = rng.randrange(4)
    return bytes([kind]) + num(rng.choice([1, 7, 1000, 1000000]))


def header(rng, layout, end_by_destroy, start):
    out = bytes([layout | (0x80 if end_by_destroy else 0)])
    if layout == 6:  # hierarchical, shape from the input (custom_layout())
        levels = rng.randrange(1, 7)
        out += bytes([levels - 1] + [rng.randrange(0, 256) for _ in range(levels)])
        out += tick(rng)
    elif layout == 7:  # hashed, shape from the input
        out += num(rng.randrange(0, 4096)) + tick(rng)
    return out + bytes([start]) + num(rng.randrange(0, 1 << 20))


def operation(rng, ntimers=24):
    t = rng.randrange(ntimers)
    kind = rng.randrange(12)
    r = rng.random()
    if r < 0.25:
        return bytes([0, t, kind]) + num(rng.randrange(0, 1 << 24))
    if r < 0.35:
        return bytes([3, t, kind]) + num(rng.randrange(0, 1 << 24))
    if r < 0.40:
        return bytes([2 if rng.random() < 0.5 else 5, t, kind]) + num(
            rng.randrange(0, 1 << 40))
    if r < 0.48:
        return bytes([6, t])
    if r < 0.70:
        return bytes([7, rng.randrange(8)]) + num(rng.randrange(0, 1 << 16))
    if r < 0.76:
        return bytes([9, rng.randrange(8), rng.randrange(8)]) + num(
            rng.randrange(0, 1 << 16))
    if r < 0.86:
        return bytes([11, t, rng.randrange(10), rng.randrange(ntimers), kind]) + num(
            rng.randrange(0, 1 << 20))
    if r < 0.90:
        return bytes([12, rng.randrange(4)])
    if r < 0.94:
        return bytes([10]) + num(rng.randrange(0, 1 << 30))
    if r < 0.985:
        return bytes([7, 4]) + num(rng.randrange(0, 1 << 50))
    return bytes([13])


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(20261122)
    n = 0
    for layout in range(8):
        for variant in range(3):
            data = header(rng, layout, variant == 2, rng.randrange(5))
            for _ in range(rng.randrange(40, 160)):
                data += operation(rng)
            name = os.path.join(OUT, "seed-layout%d-%d" % (layout, variant))
            with open(name, "wb") as f:
                f.write(data)
            n += 1
    print("wrote %d seeds into %s" % (n, OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
