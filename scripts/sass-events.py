#!/usr/bin/env python3
"""Summarize a SASS listing (`cuobjdump -sass k.cubin > k.sass`) as the
stream of events that decide whether wgmma work overlaps other work:
HGMMA runs (`HGMMA RS` when A comes from registers), WARPGROUP.DEPBAR
(wgmma.wait_group N shows as DEPBARgsb0x<N>), MUFU.EX2 runs, F2FP
(conversions), FMUL runs, SYNCS arrivals and try-waits (mbarriers), BAR.*
and branches, each with the address of its first instruction and a run
count.

usage: scripts/sass-events.py FILE.sass [FILE.sass ...]

Where cuobjdump comes from on a machine without the full CUDA toolkit:
`pip download --no-deps nvidia-cuda-cuobjdump` and unzip the wheel (its
nvidia/cu13/bin/cuobjdump runs as is); docs/experiments/c7513-order-a.cu
shows the use that found ptxas hoisting wgmma.wait_group.
"""
import re
import sys

for f in sys.argv[1:]:
    ev=[]
    for line in open(f):
        m=re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?);',line)
        if not m: continue
        ins=m.group(2)
        key=None
        if 'HGMMA' in ins: key='HGMMA'+(' RS' if re.search(r'HGMMA\S* R\d+, R\d+',ins) else '')
        elif 'DEPBAR' in ins: key='DEPBAR'+ins.split(',')[-1].strip()
        elif 'MUFU.EX2' in ins: key='EX2'
        elif 'SYNCS.ARRIVE' in ins: key='ARRIVE'
        elif 'TRYWAIT' in ins: key='TRYWAIT'
        elif re.search(r'\bBAR\.',ins): key=[w for w in ins.split() if w.startswith('BAR.')][0]
        elif 'F2FP' in ins: key='F2FP'
        elif re.search(r'\bBRA\b',ins): key='BRA'
        elif re.match(r'(@\S+ )?FMUL ',ins): key='FMUL'
        if key:
            if ev and ev[-1][0]==key: ev[-1][1]+=1
            else: ev.append([key,1,m.group(1)])
    print('==',f)
    print(' '.join(f'{k}x{n}@{a}' if n>1 else f'{k}@{a}' for k,n,a in ev))
