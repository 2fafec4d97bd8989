#!/usr/bin/env bash
# pokejax's side of `./dev bench-pokejax` on an accelerator: tools/gpu/bench.sh says how
# (BATCH_SIZES, MIN_SECONDS, OUT). From the repository root:
#   bash packages/pokejax/scripts/bench_gpu.sh
exec bash tools/gpu/bench.sh pokejax
