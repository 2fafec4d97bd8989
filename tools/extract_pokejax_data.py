#!/usr/bin/env python3
"""Regenerate packages/pokejax/src/pokejax/data/gen1.json from the pinned, installed Showdown
(``envport install-reference pokejax`` first). Same as ``python -m pokejax.data``."""

import sys

from pokejax import data

if __name__ == "__main__":
    print(data.write(data.extract()))
    sys.exit(0)
