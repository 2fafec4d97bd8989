"""``python -m envport`` = the ``envport`` command."""

import sys

from envport.cli import main

sys.exit(main())
