"""Checks the bundles a table is about to time, so that no table reports the
speed of a kernel that computes the wrong answer: `sinkattn-runner check`
on each bundle (fresh random inputs, the bundle's independent reference),
before any timing. Used by bench/interleaved_seed.py and
bench/clock_probe.py; scripts/gpu-round.sh checks every timed bundle itself
first and tells them so with --checked.
"""
import subprocess
import sys


def check_bundles(runner, bundles, timeout=600):
    """Runs `runner check --bundle B` for each distinct bundle in order and
    exits with every failure's output when one fails (or does not finish
    within `timeout` seconds)."""
    failures = []
    for bundle in dict.fromkeys(bundles):
        command = [runner, "check", "--bundle", bundle]
        try:
            proc = subprocess.run(command, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            failures.append(f"{bundle}: check did not finish in {timeout} s")
            print(f"check {bundle}: TIMEOUT", flush=True)
            continue
        print(f"check {bundle}: {'PASS' if proc.returncode == 0 else 'FAIL'}",
              flush=True)
        if proc.returncode != 0:
            failures.append(f"{bundle}: check failed (exit {proc.returncode}):\n"
                            f"{proc.stdout}{proc.stderr}")
    if failures:
        sys.exit("error: not timing bundles that fail their check:\n" +
                 "\n".join(failures))
