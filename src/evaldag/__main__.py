"""``python -m evaldag``: the ``evaldag`` command."""

import sys

from evaldag._cli.main import main

sys.exit(main())
