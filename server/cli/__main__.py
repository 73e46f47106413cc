"""``python -m seekgraph.server.cli``: the ``seekgraph`` command."""

import sys

from seekgraph.server.cli.main import main

sys.exit(main())
