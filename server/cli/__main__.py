"""``python -m server.cli``: the ``seekgraph`` command."""

import sys

from server.cli.main import main

sys.exit(main())
