#!/usr/bin/env python3
"""Draws the seed table (sink-fwd vs cuDNN SDPA, per cell, same run) as a PNG
bar chart.

Python 3 standard library only: the chart has to be regenerated on a bare
GPU machine or CI image, so the PNG encoder (zlib + struct) and a 5x7 bitmap
font are built in.

Inputs, either
  --table FILE           the combined form (docs/perf-seed-table.json):
                         {"gpu", "date", "commit", "command", "note",
                          "cudnn_form",
                          "cells": [{"seq", "head_dim", "sinkattn_tflops",
                                     "cudnn_tflops", "sinkattn_form"}, ...]}
or
  --sinkattn FILE...     `sinkattn-runner bench --json` files of sink-fwd
                         bundles (one result each, usually one file per cell)
  --cudnn FILE           `bench/compare_sdpa.py --json` output (or
                         interleaved_seed.py's), its rows of the form
                         --cudnn-form (cudnn-gqa, or cudnn-mha-expanded: the
                         default, and the form of rows that name none)
Cells are matched by (sequence length, head dim). TFLOP/s are by the seed's
formula 4*B*H*S*S*D/2 / time on both sides. A cell that one side lacks is
drawn with the other bar only and labelled n/a. Bad input is one line on
stderr and exit code 2.

  python3 bench/plot_seed_table.py --table docs/perf-seed-table.json \\
      --output docs/perf-seed-table.png
  python3 bench/plot_seed_table.py --sinkattn out/bench-sink-fwd-seed-*-d{64,128}.json \\
      --cudnn out/sdpa-baselines.json --date 2026-12-01 --commit abc1234 \\
      --write-table docs/perf-seed-table.json --output docs/perf-seed-table.png
"""
import argparse
import json
import math
import struct
import sys
import zlib

# The seed table's cells, in docs/PERF.md's row order (D 64 first).
SEED_SEQS = (2048, 4096, 8192, 16384)
SEED_HEAD_DIMS = (64, 128)
SEED_CELLS = [(seq, d) for d in SEED_HEAD_DIMS for seq in SEED_SEQS]

PROG = "plot_seed_table.py"


class InputError(Exception):
    """Bad or inconsistent input: reported as one line, exit code 2."""


# --------------------------------------------------------------------------
# Reading the inputs.


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror or e}")
    except UnicodeDecodeError:
        raise InputError(f"'{path}' is not UTF-8 text")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"'{path}' is not valid JSON: {e.msg} at line {e.lineno} "
                         f"column {e.colno}")
    except RecursionError:
        raise InputError(f"'{path}' is not valid JSON: nested too deeply")


def expect_object(value, where):
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object")
    return value


def get_int(obj, key, where):
    value = obj.get(key)
    # bool is an int in Python; a JSON true is not a length.
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"{where}: '{key}' must be a positive integer, got {json.dumps(value)}")
    return value


def get_tflops(obj, key, where, optional=False):
    value = obj.get(key)
    if value is None and optional:
        return None
    if (not isinstance(value, (int, float)) or isinstance(value, bool)
            or not math.isfinite(value) or value <= 0):
        raise InputError(f"{where}: '{key}' must be a positive number, got {json.dumps(value)}")
    # Far beyond any GPU; also keeps the axis arithmetic finite.
    if value > 1e5:
        raise InputError(f"{where}: '{key}' = {value:g} TFLOP/s is implausible")
    return float(value)


def get_text(obj, key, where):
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: '{key}' must be a string")
    return value


def check_seed_cell(seq, head_dim, where):
    if (seq, head_dim) not in SEED_CELLS:
        raise InputError(f"{where}: S={seq} D={head_dim} is not a seed-table cell "
                         f"(S in {'/'.join(map(str, SEED_SEQS))}, "
                         f"D in {'/'.join(map(str, SEED_HEAD_DIMS))})")


class Table:
    """The combined form: per cell SinkAttn and cuDNN TFLOP/s (None: not measured)."""

    def __init__(self):
        self.gpu = self.date = self.commit = self.command = self.note = None
        self.cudnn_form = None
        self.sinkattn_form = {}  # (seq, head_dim) -> the SinkAttn row's form
        self.sinkattn = {}  # (seq, head_dim) -> TFLOP/s
        self.cudnn = {}
        # Where each cell came from and its (batch, heads, kv_heads), so a
        # cell given twice or two sides of different problems are caught.
        self.origin = {}
        self.problem = {}

    def add(self, side, cell, tflops, where, problem=None):
        values = self.sinkattn if side == "sinkattn" else self.cudnn
        if cell in values:
            raise InputError(f"{where}: S={cell[0]} D={cell[1]} is given twice for {side} "
                             f"(also in {self.origin[side, cell]})")
        values[cell] = tflops
        self.origin[side, cell] = where
        if problem is not None:
            other = self.problem.get(cell)
            if other is not None and other[0] != problem:
                raise InputError(
                    f"{where}: S={cell[0]} D={cell[1]} is B/H/HK={'/'.join(map(str, problem))} "
                    f"but {other[1]} has {'/'.join(map(str, other[0]))}: not the same problem")
            self.problem.setdefault(cell, (problem, where))

    def set_gpu(self, gpu, where):
        if gpu is None:
            return
        # Both sides must come from one GPU: the chart compares one run.
        if self.gpu is not None and gpu != self.gpu:
            raise InputError(f"{where}: GPU '{gpu}' differs from '{self.gpu}' of the other input")
        self.gpu = gpu

    def to_json(self):
        out = {}
        for key in ("gpu", "date", "commit", "command", "note", "cudnn_form"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["cells"] = [{"seq": seq, "head_dim": d,
                         "sinkattn_tflops": self.sinkattn.get((seq, d)),
                         "cudnn_tflops": self.cudnn.get((seq, d)),
                         "sinkattn_form": self.sinkattn_form.get((seq, d))}
                        for seq, d in SEED_CELLS
                        if (seq, d) in self.sinkattn or (seq, d) in self.cudnn]
        return out


def read_table(path, table):
    top = expect_object(load_json(path), f"'{path}'")
    for key in ("gpu", "date", "commit", "command", "note", "cudnn_form"):
        setattr(table, key, get_text(top, key, f"'{path}'"))
    cells = top.get("cells")
    if not isinstance(cells, list) or not cells:
        raise InputError(f"'{path}': 'cells' must be a non-empty list")
    for index, cell in enumerate(cells):
        where = f"'{path}' cells[{index}]"
        expect_object(cell, where)
        key = (get_int(cell, "seq", where), get_int(cell, "head_dim", where))
        check_seed_cell(*key, where)
        for side in ("sinkattn", "cudnn"):
            value = get_tflops(cell, f"{side}_tflops", where, optional=True)
            if value is not None:
                table.add(side, key, value, where)
        form = get_text(cell, "sinkattn_form", where)
        if form is not None:
            table.sinkattn_form[key] = form


def parse_runner_config(text, where):
    """`sinkattn-runner bench` writes the bundle config as 'key=value ...'."""
    if not isinstance(text, str):
        raise InputError(f"{where}: 'config' must be a string of key=value pairs")
    config = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"{where}: config item '{item}' is not key=value")
        config[key] = int(value) if value.isdigit() else value
    return config


def read_results(path, table, writer):
    """The top-level object and its (where, row) results of a bench JSON
    file written by `writer`; records the file's GPU in `table`."""
    top = expect_object(load_json(path), f"'{path}'")
    results = top.get("results")
    if not isinstance(results, list) or not results:
        raise InputError(f"'{path}': 'results' must be a non-empty list "
                         f"(a `{writer}` file)")
    table.set_gpu(get_text(top, "gpu", f"'{path}'"), f"'{path}'")
    rows = []
    for index, row in enumerate(results):
        where = f"'{path}' results[{index}]"
        rows.append((where, expect_object(row, where)))
    return top, rows


def read_sinkattn(path, table):
    top, rows = read_results(path, table, "sinkattn-runner bench --json")
    for where, row in rows:
        if row.get("kernel") != "sink-fwd":
            raise InputError(f"{where}: kernel is {json.dumps(row.get('kernel'))}, not \"sink-fwd\"")
        config = parse_runner_config(row.get("config"), where)
        seq = get_int(config, "seq_q", where + " config")
        d = get_int(config, "head_dim", where + " config")
        # The seed formula counts S*S/2 pairs: only causal, square, windowless
        # runs are seed-table cells. `bench --preset seed` also times the
        # sliding-window rows: they are not cells of the chart.
        if top.get("preset") == "seed" and config.get("window") not in (0, None):
            continue
        if config.get("seq_kv") != seq or config.get("window") != 0:
            raise InputError(f"{where}: not a seed-table shape (needs seq_q = seq_kv and "
                             f"window=0, config is '{row['config']}')")
        check_seed_cell(seq, d, where)
        problem = tuple(get_int(config, k, where + " config")
                        for k in ("batch", "heads", "kv_heads"))
        table.add("sinkattn", (seq, d), get_tflops(row, "tflops_seed_formula", where),
                  f"'{path}'", problem)
        form = get_text(row, "form", where)
        if form is not None:
            table.sinkattn_form[(seq, d)] = form


CUDNN_FORMS = ("cudnn-gqa", "cudnn-mha-expanded")


def read_cudnn(path, table, form):
    top = expect_object(load_json(path), f"'{path}'")
    unavailable = top.get("unavailable") or {}
    if isinstance(unavailable, dict) and form in unavailable:
        raise InputError(f"'{path}': the cuDNN form {form} is unavailable: "
                         f"{unavailable[form]}")
    _, rows = read_results(path, table, "bench/compare_sdpa.py --json")
    table.cudnn_form = form
    for where, row in rows:
        # The chart is the forward's (the file also holds backward rows).
        if row.get("name", "cudnn_sdpa_causal_fwd") != "cudnn_sdpa_causal_fwd":
            continue
        # Rows from before the GQA form name no form: the expanded one.
        if row.get("form", "cudnn-mha-expanded") != form:
            continue
        key = (get_int(row, "seq", where), get_int(row, "head_dim", where))
        check_seed_cell(*key, where)
        problem = None
        if all(k in row for k in ("batch", "heads", "kv_heads")):
            problem = tuple(get_int(row, k, where) for k in ("batch", "heads", "kv_heads"))
        table.add("cudnn", key, get_tflops(row, "tflops_seed", where), where, problem)


# --------------------------------------------------------------------------
# A 5x7 bitmap font: printable ASCII, one glyph per line, 7 rows of 5 pixels
# (9 for the descenders of g, j, p, q, y, which hang below the baseline).

FONT_ROWS = {
    " ": "..... ..... ..... ..... ..... ..... .....",
    "!": "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",
    '"': ".#.#. .#.#. .#.#. ..... ..... ..... .....",
    "#": ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",
    "$": "..#.. .#### #.#.. .###. ..#.# ####. ..#..",
    "%": "##... ##..# ...#. ..#.. .#... #..## ...##",
    "&": ".##.. #..#. #.#.. .#... #.#.# #..#. .##.#",
    "'": "..#.. ..#.. .#... ..... ..... ..... .....",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    "*": "..... ..#.. #.#.# .###. #.#.# ..#.. .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    "-": "..... ..... ..... ##### ..... ..... .....",
    ".": "..... ..... ..... ..... ..... .##.. .##..",
    "/": "..... ....# ...#. ..#.. .#... #.... .....",
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ...#. .##..",
    ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    ";": "..... .##.. .##.. ..... .##.. ..#.. .#...",
    "<": "...#. ..#.. .#... #.... .#... ..#.. ...#.",
    "=": "..... ..... ##### ..... ##### ..... .....",
    ">": ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
    "@": ".###. #...# ....# .##.# #.#.# #.#.# .###.",
    "A": ".###. #...# #...# #...# ##### #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "###.. #..#. #...# #...# #...# #..#. ###..",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# #...# .#.#. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    "[": ".###. .#... .#... .#... .#... .#... .###.",
    "\\": "..... #.... .#... ..#.. ...#. ....# .....",
    "]": ".###. ...#. ...#. ...#. ...#. ...#. .###.",
    "^": "..#.. .#.#. #...# ..... ..... ..... .....",
    "_": "..... ..... ..... ..... ..... ..... #####",
    "`": ".#... ..#.. ...#. ..... ..... ..... .....",
    "a": "..... ..... .###. ....# .#### #...# .####",
    "b": "#.... #.... #.##. ##..# #...# #...# ####.",
    "c": "..... ..... .###. #.... #.... #...# .###.",
    "d": "....# ....# .##.# #..## #...# #...# .####",
    "e": "..... ..... .###. #...# ##### #.... .###.",
    "f": "..##. .#..# .#... ###.. .#... .#... .#...",
    "g": "..... ..... .#### #...# #...# #...# .#### ....# .###.",
    "h": "#.... #.... #.##. ##..# #...# #...# #...#",
    "i": "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.",
    "j": "...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##..",
    "k": "#.... #.... #..#. #.#.. ##... #.#.. #..#.",
    "l": ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "m": "..... ..... ##.#. #.#.# #.#.# #...# #...#",
    "n": "..... ..... #.##. ##..# #...# #...# #...#",
    "o": "..... ..... .###. #...# #...# #...# .###.",
    "p": "..... ..... ####. #...# #...# #...# ####. #.... #....",
    "q": "..... ..... .#### #...# #...# #...# .#### ....# ....#",
    "r": "..... ..... #.##. ##..# #.... #.... #....",
    "s": "..... ..... .###. #.... .###. ....# ####.",
    "t": ".#... .#... ###.. .#... .#... .#..# ..##.",
    "u": "..... ..... #...# #...# #...# #..## .##.#",
    "v": "..... ..... #...# #...# #...# .#.#. ..#..",
    "w": "..... ..... #...# #...# #.#.# #.#.# .#.#.",
    "x": "..... ..... #...# .#.#. ..#.. .#.#. #...#",
    "y": "..... ..... #...# #...# #...# #...# .#### ....# .###.",
    "z": "..... ..... ##### ...#. ..#.. .#... #####",
    "{": "...#. ..#.. ..#.. .#... ..#.. ..#.. ...#.",
    "|": "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "}": ".#... ..#.. ..#.. ...#. ..#.. ..#.. .#...",
    "~": "..... ..... .#... #.#.# ...#. ..... .....",
}
# The lit pixel coordinates (column, row) of each glyph.
FONT = {ch: [(x, y) for y, row in enumerate(rows.split()) for x, bit in enumerate(row)
             if bit == "#"]
        for ch, rows in FONT_ROWS.items()}
ADVANCE = 6  # 5 pixels of glyph, 1 of spacing
# Typography outside ASCII that titles and commands commonly carry.
FALLBACK = {"\u00d7": "x", "\u2014": "-", "\u2013": "-", "\u00b7": "*", "\u2264": "<=",
            "\u2265": ">=", "\u00b2": "^2", "\u00b3": "^3", "\u2019": "'", "\u201c": '"',
            "\u201d": '"'}


def font_text(text):
    """The text as the font can draw it (unknown characters become '?')."""
    return "".join(FALLBACK.get(c, c if c in FONT else "?") for c in text)


def text_width(text, scale):
    return max(len(font_text(text)) * ADVANCE - 1, 0) * scale


# --------------------------------------------------------------------------
# A raster canvas and the PNG encoder.


class Canvas:
    def __init__(self, width, height, background):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def rect(self, x0, y0, x1, y1, color):
        """Fills [x0, x1) x [y0, y1), clipped to the canvas."""
        x0, x1 = max(0, int(x0)), min(self.width, int(x1))
        y0, y1 = max(0, int(y0)), min(self.height, int(y1))
        if x0 >= x1:
            return
        span = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            start = (y * self.width + x0) * 3
            self.pixels[start:start + len(span)] = span

    def text(self, x, y, text, color, scale=2, vertical=False):
        """Draws text with its top-left corner at (x, y); vertical text reads
        bottom to top and (x, y) is then its bottom-left corner."""
        for i, ch in enumerate(font_text(text)):
            for gx, gy in FONT[ch]:
                along = i * ADVANCE + gx
                if vertical:
                    self.rect(x + gy * scale, y - (along + 1) * scale,
                              x + (gy + 1) * scale, y - along * scale, color)
                else:
                    self.rect(x + along * scale, y + gy * scale,
                              x + (along + 1) * scale, y + (gy + 1) * scale, color)

    def text_centered(self, cx, y, text, color, scale=2):
        self.text(cx - text_width(text, scale) // 2, y, text, color, scale)

    def png(self):
        def chunk(tag, data):
            return (struct.pack(">I", len(data)) + tag + data
                    + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
        stride = self.width * 3
        # Filter type 0 (none) on every scanline: simple, and zlib still
        # compresses the flat chart colours well.
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride:(y + 1) * stride])
                       for y in range(self.height))
        ihdr = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


# --------------------------------------------------------------------------
# The chart.

WHITE = (255, 255, 255)
INK = (33, 37, 41)
MUTED = (108, 117, 125)
GRID = (222, 226, 230)
SINKATTN_COLOR = (31, 119, 180)
CUDNN_COLOR = (240, 140, 40)

WIDTH, HEIGHT = 1000, 620
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 96, WIDTH - 24, 124, HEIGHT - 136
BAR_W, BAR_GAP, HALF_GAP = 40, 4, 28  # HALF_GAP separates the D 64 and D 128 halves


def tick_step(top):
    """A 1/2/2.5/5 x 10^k step giving about six gridlines up to `top`."""
    raw = top / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * magnitude >= raw:
            return m * magnitude
    return 10 * magnitude


def fmt_number(value):
    return f"{value:.0f}" if value == int(value) else f"{value:g}"


def fit_line(text, width, scale):
    """The largest scale (<= `scale`) at which text fits `width`, truncating
    with '...' when even scale 1 is too narrow."""
    for s in range(scale, 0, -1):
        if text_width(text, s) <= width:
            return text, s
    keep = max(width // ADVANCE - 3, 0)
    return font_text(text)[:keep] + "...", 1


def draw_chart(table, title_extra):
    canvas = Canvas(WIDTH, HEIGHT, WHITE)
    values = list(table.sinkattn.values()) + list(table.cudnn.values())
    if not values:
        raise InputError("no cell has a SinkAttn or cuDNN number: nothing to plot")

    # Titles and legend.
    canvas.text(16, 12, "Seed table: SinkAttn (with sinks) vs cuDNN SDPA (no sinks)", INK, 2)
    details = [table.gpu, table.date, f"commit {table.commit}" if table.commit else None,
               title_extra]
    subtitle, scale = fit_line(", ".join(d for d in details if d), WIDTH - 32, 2)
    canvas.text(16, 38, subtitle, MUTED, scale)
    legend_x = 16
    for color, label in ((SINKATTN_COLOR, "SinkAttn sink-fwd (with sinks)"),
                         (CUDNN_COLOR, f"cuDNN SDPA {table.cudnn_form or 'causal'} (no sinks)")):
        canvas.rect(legend_x, 70, legend_x + 16, 86, color)
        canvas.text(legend_x + 24, 71, label, INK, 2)
        legend_x += 24 + text_width(label, 2) + 36

    # Y axis: gridlines, tick labels, a rotated label. Headroom above the
    # tallest bar leaves space for the ratio labels.
    step = tick_step(max(values) * 1.12)
    y_max = step * math.ceil(max(values) * 1.12 / step)

    def y_of(v):
        return PLOT_BOTTOM - round(v / y_max * (PLOT_BOTTOM - PLOT_TOP))

    for i in range(int(round(y_max / step)) + 1):
        v = i * step
        y = y_of(v)
        canvas.rect(PLOT_LEFT, y, PLOT_RIGHT, y + 1, GRID)
        # Scale 1 for labels too wide for the margin beside the axis title.
        label = fmt_number(v)
        scale = 2 if text_width(label, 2) <= PLOT_LEFT - 44 else 1
        canvas.text(PLOT_LEFT - 10 - text_width(label, scale), y - 7 * scale // 2, label, INK,
                    scale)
    axis_label = "TFLOP/s (seed formula)"
    canvas.text(14, (PLOT_TOP + PLOT_BOTTOM) // 2 + text_width(axis_label, 2) // 2,
                axis_label, INK, 2, vertical=True)

    # Groups: one per cell, SinkAttn left, cuDNN right; a wider gap between
    # the head dims, and a bracket under each half naming its D.
    group_w = (PLOT_RIGHT - PLOT_LEFT - HALF_GAP) / len(SEED_CELLS)
    centers = {}
    for index, cell in enumerate(SEED_CELLS):
        half = index // len(SEED_SEQS)
        centers[cell] = PLOT_LEFT + HALF_GAP * half + group_w * (index + 0.5)
    for cell in SEED_CELLS:
        cx = round(centers[cell])
        bars = ((cx - BAR_GAP // 2 - BAR_W, table.sinkattn.get(cell), SINKATTN_COLOR),
                (cx + BAR_GAP // 2, table.cudnn.get(cell), CUDNN_COLOR))
        tallest = PLOT_BOTTOM
        one_missing = sum(value is None for _, value, _ in bars) == 1
        for x, value, color in bars:
            if value is None:
                # Mark the missing bar's slot; an empty cell has only the
                # group's n/a below.
                if one_missing:
                    canvas.text_centered(x + BAR_W // 2, PLOT_BOTTOM - 20, "n/a", MUTED, 2)
                continue
            top = y_of(value)
            tallest = min(tallest, top)
            canvas.rect(x, top, x + BAR_W, PLOT_BOTTOM, color)
            # The value inside the bar's top, where it fits.
            label = f"{value:.0f}" if value >= 10 else f"{value:.2g}"
            scale = 2 if text_width(label, 2) <= BAR_W - 2 else 1
            if PLOT_BOTTOM - top >= 8 * scale + 6:
                canvas.text_centered(x + BAR_W // 2, top + 5, label, WHITE, scale)
        s_value, c_value = table.sinkattn.get(cell), table.cudnn.get(cell)
        ratio = f"{s_value / c_value:.2f}x" if s_value and c_value else "n/a"
        canvas.text_centered(cx, tallest - 20, ratio, INK if ratio != "n/a" else MUTED, 2)
        canvas.text_centered(cx, PLOT_BOTTOM + 10, f"S={cell[0]}", INK, 2)
    for half, d in enumerate(SEED_HEAD_DIMS):
        cells = SEED_CELLS[half * len(SEED_SEQS):(half + 1) * len(SEED_SEQS)]
        x0 = round(centers[cells[0]] - group_w / 2 + 6)
        x1 = round(centers[cells[-1]] + group_w / 2 - 6)
        canvas.rect(x0, PLOT_BOTTOM + 34, x1, PLOT_BOTTOM + 35, MUTED)
        canvas.rect(x0, PLOT_BOTTOM + 28, x0 + 1, PLOT_BOTTOM + 35, MUTED)
        canvas.rect(x1 - 1, PLOT_BOTTOM + 28, x1, PLOT_BOTTOM + 35, MUTED)
        canvas.text_centered((x0 + x1) // 2, PLOT_BOTTOM + 42, f"head dim D={d}", INK, 2)
    canvas.rect(PLOT_LEFT, PLOT_TOP, PLOT_LEFT + 1, PLOT_BOTTOM + 1, INK)
    canvas.rect(PLOT_LEFT, PLOT_BOTTOM, PLOT_RIGHT, PLOT_BOTTOM + 1, INK)

    canvas.text(16, HEIGHT - 50,
                "TFLOP/s = 4*B*H*S*S*D/2 / median time (bf16, causal), both in one run", MUTED, 2)
    canvas.text(16, HEIGHT - 26, "ratio above each cell: SinkAttn / cuDNN", MUTED, 2)
    return canvas


# --------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", metavar="FILE", help="the combined table JSON")
    parser.add_argument("--sinkattn", metavar="FILE", nargs="+", default=[],
                        help="sinkattn-runner bench --json files (sink-fwd)")
    parser.add_argument("--cudnn", metavar="FILE", help="bench/compare_sdpa.py --json file")
    parser.add_argument("--cudnn-form", choices=CUDNN_FORMS, default="cudnn-mha-expanded",
                        help="the --cudnn rows to draw (default cudnn-mha-expanded)")
    parser.add_argument("--title-extra", metavar="TEXT", help="appended to the title's details")
    parser.add_argument("--date", help="the run's date (title; --write-table)")
    parser.add_argument("--commit", help="the run's commit (title; --write-table)")
    parser.add_argument("--command", help="the run's command (--write-table)")
    parser.add_argument("--output", metavar="PNG", help="write the chart here")
    parser.add_argument("--write-table", metavar="FILE",
                        help="write the combined table JSON here")
    args = parser.parse_args(argv)
    if args.table and (args.sinkattn or args.cudnn):
        parser.error("give either --table or --sinkattn/--cudnn, not both")
    if not (args.table or args.sinkattn or args.cudnn):
        parser.error("give --table, or --sinkattn and --cudnn")
    if not (args.output or args.write_table):
        parser.error("give --output and/or --write-table")
    return args


def write_file(path, data):
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise InputError(f"cannot write '{path}': {e.strerror or e}")


def main(argv):
    args = parse_args(argv)
    table = Table()
    if args.table:
        read_table(args.table, table)
    for path in args.sinkattn:
        read_sinkattn(path, table)
    if args.cudnn:
        read_cudnn(args.cudnn, table, args.cudnn_form)
    for key in ("date", "commit", "command"):
        if getattr(args, key) is not None:
            setattr(table, key, getattr(args, key))
    if args.write_table:
        write_file(args.write_table,
                   (json.dumps(table.to_json(), indent=2) + "\n").encode("utf-8"))
    if args.output:
        write_file(args.output, draw_chart(table, args.title_extra).png())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
