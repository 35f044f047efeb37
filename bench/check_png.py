#!/usr/bin/env python3
"""Checks that a file is a well-formed PNG as bench/plot_seed_table.py writes
them and prints its header, for tests to match:

  PNG 1000x620 depth 8 color-type 2 (RGB), 620 scanlines, filter 0

Verified: the signature, every chunk's length and CRC, IHDR first and IEND
last, and that the IDAT data inflates to exactly height scanlines of
1 + 3 * width bytes, each with filter type 0. Exit 1 (with the reason)
otherwise. Standard library only.
"""
import struct
import sys
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PngError(Exception):
    pass


def check(data):
    if not data.startswith(SIGNATURE):
        raise PngError("no PNG signature")
    pos, chunks = len(SIGNATURE), []
    while pos < len(data):
        if pos + 8 > len(data):
            raise PngError(f"truncated chunk header at byte {pos}")
        length, tag = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise PngError(f"truncated {tag!r} chunk")
        if struct.unpack(">I", crc)[0] != zlib.crc32(tag + body) & 0xFFFFFFFF:
            raise PngError(f"bad CRC in {tag!r} chunk")
        chunks.append((tag, body))
        pos += 12 + length
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        raise PngError("IHDR is not the first chunk")
    if chunks[-1][0] != b"IEND":
        raise PngError("IEND is not the last chunk")
    width, height, depth, color, compression, filtering, interlace = struct.unpack(
        ">IIBBBBB", chunks[0][1])
    if (depth, color, compression, filtering, interlace) != (8, 2, 0, 0, 0):
        raise PngError(f"not 8-bit RGB, non-interlaced: depth {depth} color-type {color}")
    try:
        raw = zlib.decompress(b"".join(body for tag, body in chunks if tag == b"IDAT"))
    except zlib.error as e:
        raise PngError(f"IDAT does not inflate: {e}")
    stride = 1 + 3 * width
    if len(raw) != height * stride:
        raise PngError(f"IDAT holds {len(raw)} bytes, {height} scanlines need {height * stride}")
    filters = {raw[y * stride] for y in range(height)}
    if filters != {0}:
        raise PngError(f"scanline filter types {sorted(filters)}, expected 0 only")
    return f"PNG {width}x{height} depth 8 color-type 2 (RGB), {height} scanlines, filter 0"


def main():
    if len(sys.argv) != 2:
        print("usage: check_png.py FILE.png", file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], "rb") as f:
            print(check(f.read()))
    except (OSError, PngError) as e:
        print(f"check_png.py: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
