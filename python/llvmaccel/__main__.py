"""``python -m llvmaccel``: the llvmaccel command line."""

import sys

from .cli import main

sys.exit(main())
