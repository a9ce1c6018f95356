# SPDX-License-Identifier: MIT
"""python -m actrace: the actrace command."""
import sys

from ._cli import main

sys.exit(main())
