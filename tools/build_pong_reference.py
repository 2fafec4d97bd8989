#!/usr/bin/env python3
"""Build the Pong reference (PufferLib 3.0.0 ocean/pong C extension) from the pinned sdist.

Same as ``envport install-reference pong``; see ``pong_port.reference_build`` for how and why.
"""

import sys

from pong_port.reference_build import main

if __name__ == "__main__":
    sys.exit(main())
