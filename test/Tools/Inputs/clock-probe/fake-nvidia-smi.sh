#!/usr/bin/env bash
# A stand-in for `nvidia-smi --query-gpu=... -lms=N` (test/Tools/clock-probe.test):
# one idle sample, then busy samples every 20 ms until terminated. Odd calls
# (SinkAttn's side) report 1725 MHz, even ones (cuDNN's) 1830 MHz; the call
# count lives in $FAKE_SMI_STATE.
n=$(cat "$FAKE_SMI_STATE" 2>/dev/null || echo 0)
echo $((n + 1)) > "$FAKE_SMI_STATE"
clock=1725
((n % 2)) && clock=1830
echo "345, 80.00, 40, 0x0000000000000000"
while true; do
  echo "$clock, 690.00, 61, 0x0000000000000004"
  sleep 0.02
done
