#!/usr/bin/env python3
"""Static instruction mix of a kernel's main loop in a SASS listing.

The main loop is the largest backward branch (a branch to an earlier label)
whose body holds wgmma (HGMMA) and no global store (STG): the epilogue's
loops store, the prologue's hold no HGMMA, and a smaller inner branch would
pick one of the masked paths. Prints the loop's address range, its
instruction count and the most frequent opcodes (predicates dropped). This is
how docs/design.md and docs/PERF.md count "loop instructions".

usage: scripts/sass-loop-stats.py FILE.sass KERNEL [--top N]

Where the listing comes from on a machine without a GPU: ptxas from the CUDA
toolkit (`ptxas -arch=sm_90a k.ptx -o k.cubin`) and nvdisasm from PyPI
(`pip download --no-deps nvidia-cuda-nvdisasm`, unzip the wheel; its
nvidia/cu13/bin/nvdisasm runs as is): `nvdisasm -c k.cubin > k.sass`.
"""
import argparse
import collections
import re
import sys


def read_kernel(path, kernel):
    """(address, instruction) pairs of `kernel`'s text section and its labels."""
    instructions, labels, pending, inside = [], {}, [], False
    for line in open(path):
        if '.text.' in line and '----' in line:
            inside = re.search(r'\.text\.(\S+)', line).group(1) == kernel
            continue
        if not inside:
            continue
        label = re.match(r'^(\.L_x_\d+):', line.strip())
        if label:
            pending.append(label.group(1))
        m = re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m:
            address = int(m.group(1), 16)
            instructions.append((address, m.group(2)))
            for name in pending:
                labels[name] = address
            pending.clear()
    return instructions, labels


def opcode(instruction):
    """The opcode of an instruction, without its predicate (`@!P0 BRA` -> BRA)."""
    return re.sub(r'^@!?U?P\w+ ', '', instruction).split()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('sass')
    parser.add_argument('kernel')
    parser.add_argument('--top', type=int, default=30)
    args = parser.parse_args()
    instructions, labels = read_kernel(args.sass, args.kernel)
    if not instructions:
        sys.exit(f'error: no text section .text.{args.kernel} in {args.sass}')
    best = None
    for address, text in instructions:
        m = re.search(r'\bBRA\S*\s+(?:\S+,\s*)?`?\(?(\.L_x_\d+)', text)
        target = labels.get(m.group(1)) if m else None
        if target is None or target >= address:
            continue
        opcodes = [opcode(t) for a, t in instructions if target <= a <= address]
        if any(o.startswith('HGMMA') for o in opcodes) and \
           not any(o.startswith('STG') for o in opcodes):
            if best is None or address - target > best[1] - best[0]:
                best = (target, address, opcodes)
    if best is None:
        sys.exit(f'error: {args.kernel} has no loop with HGMMA and without STG')
    start, end, opcodes = best
    counts = collections.Counter(opcodes)
    print(f'{args.kernel}: loop {start:#x}-{end:#x}, {len(opcodes)} instructions')
    for name, count in counts.most_common(args.top):
        print(f"{count:6d} {name}")


if __name__ == '__main__':
    main()
