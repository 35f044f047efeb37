#!/usr/bin/env python3
"""Runs the lowered IR of fragment stores into 128-byte-swizzled shared tiles
for every thread of a warpgroup and checks, per function:

  * placement: every element of the fragment is written exactly once, at
    its 128-byte-swizzled position (computed here from the wgmma
    accumulator layout, independently of the lowering);
  * banks: no store instruction has a bank conflict. Shared memory serves
    accesses of 8 bytes per thread half a warp at a time and narrower ones
    a whole warp at a time; within that group every 4-byte bank may be
    touched by one address only (two threads of one group writing one
    bank at different addresses would cost a second wavefront).

Reads `sinkattn-opt --convert-tile-fragments-to-nvvm --canonicalize` output
on stdin; each checked function's name says what it stores:
`@banks_<rows>x<cols>x<f32|bf16>_col<c>` stores a rows x cols fragment into
a swizzled tile of 64 x 128 elements at row 0, column c. Prints one line
per function; exits 1 on anything it cannot evaluate.
"""
import re
import sys

BANKS = 32


def swizzled_offset(row, col, tile_rows, bits):
    """Element offset of (row, col) in a 128-byte-swizzled tile stored as
    panels of 128-byte rows (TMA's layout)."""
    panel_cols = 1024 // bits  # 128 bytes
    chunk = 128 // bits  # elements per 16-byte chunk
    panel, inner = divmod(col, panel_cols)
    return (panel * tile_rows * panel_cols + row * panel_cols +
            (((inner // chunk) ^ (row % 8)) * chunk) + inner % chunk)


def accumulator_placement(t, r, cols):
    """(row, col) of register r of thread t in a 64 x cols accumulator."""
    warp, lane = divmod(t, 32)
    j, rest = divmod(r, 4)
    h, e = divmod(rest, 2)
    return 16 * warp + lane // 4 + 8 * h, 8 * j + 2 * (lane % 4) + e


def evaluate(body, thread):
    """Runs one function body for one thread: the list of stores, each
    (address in elements, [register indices])."""
    env = {}
    stores = []
    for line in body:
        line = line.strip()
        if not line or line.startswith(('func.func', 'return', '}', 'tile.copy',
                                        'nvvm.', 'gpu.barrier', '//')):
            continue
        m = re.match(r'(%[\w]+) = (.*)$', line)
        if m:
            name, rhs = m.groups()
            env[name] = evaluate_op(rhs, env, thread)
            continue
        m = re.match(r'vector\.store (%\w+), (%\w+)\[(%\w+)\]', line)
        if m:
            value, _, index = m.groups()
            stores.append((env[index], env[value]))
            continue
        raise SystemExit(f'cannot evaluate: {line}')
    return stores


def evaluate_op(rhs, env, thread):
    binary = {'addi': lambda a, b: a + b, 'subi': lambda a, b: a - b,
              'muli': lambda a, b: a * b, 'divui': lambda a, b: a // b,
              'remui': lambda a, b: a % b, 'andi': lambda a, b: a & b,
              'xori': lambda a, b: a ^ b, 'ori': lambda a, b: a | b}
    m = re.match(r'arith\.constant (-?\d+) : index', rhs)
    if m:
        return int(m.group(1))
    if rhs.startswith('gpu.thread_id'):
        return thread
    m = re.match(r'arith\.(\w+) (%\w+), (%\w+) : index', rhs)
    if m and m.group(1) in binary:
        return binary[m.group(1)](env[m.group(2)], env[m.group(3)])
    m = re.match(r'arith\.cmpi (\w+), (%\w+), (%\w+) : index', rhs)
    if m:
        a, b = env[m.group(2)], env[m.group(3)]
        return {'eq': a == b, 'ne': a != b, 'ult': a < b, 'slt': a < b}[m.group(1)]
    m = re.match(r'arith\.select (%\w+), (%\w+), (%\w+)', rhs)
    if m:
        return env[m.group(2)] if env[m.group(1)] else env[m.group(3)]
    m = re.match(r'vector\.extract (%\w+)\[(\d+)\]', rhs)
    if m:
        return [int(m.group(2))]
    m = re.match(r'vector\.from_elements (.*) : vector', rhs)
    if m:
        return [env[v.strip()][0] for v in m.group(1).split(',')]
    if rhs.startswith(('builtin.unrealized_conversion_cast', 'memref.alloc',
                       'memref.reinterpret_cast', 'arith.constant')):
        return None
    raise SystemExit(f'cannot evaluate: {rhs}')


def check(name, body):
    m = re.match(r'banks_(\d+)x(\d+)x(f32|bf16)_col(\d+)', name)
    rows, cols, kind, col0 = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4))
    bits = 32 if kind == 'f32' else 16
    tile_rows = 64
    written = {}
    per_instruction = None
    for t in range(128):
        stores = evaluate(body, t)
        per_instruction = per_instruction or [[] for _ in stores]
        for i, (address, registers) in enumerate(stores):
            for k, r in enumerate(registers):
                written.setdefault((t, r), []).append(address + k)
            per_instruction[i].append((t, address, len(registers)))
    misplaced = 0
    registers = rows * cols // 128
    for t in range(128):
        for r in range(registers):
            row, col = accumulator_placement(t, r, cols)
            want = swizzled_offset(row, col0 + col, tile_rows, bits)
            if written.get((t, r)) != [want]:
                misplaced += 1
    conflicts = 0
    groups = 0
    for accesses in per_instruction:
        width = accesses[0][2] * bits // 8  # bytes per thread
        group = 16 if width == 8 else 32
        for start in range(0, 128, group):
            banks = {}
            for t, address, _ in accesses[start:start + group]:
                byte = address * bits // 8
                for word in range(byte // 4, (byte + width) // 4):
                    banks.setdefault(word % BANKS, set()).add(word)
            groups += 1
            if any(len(words) > 1 for words in banks.values()):
                conflicts += 1
    print(f'{name}: {len(per_instruction)} stores, {misplaced} misplaced '
          f'elements, {conflicts} of {groups} access groups with a bank '
          f'conflict')
    return misplaced == 0


def main():
    text = sys.stdin.read()
    ok = True
    for m in re.finditer(r'func\.func @(banks_\w+)\(.*?\n(.*?)\n    return',
                         text, re.S):
        ok &= check(m.group(1), m.group(2).split('\n'))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
