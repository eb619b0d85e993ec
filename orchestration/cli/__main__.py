"""``python -m orchestration.cli``: the ``kiltpipe`` command."""

import sys

from orchestration.cli.main import main

sys.exit(main())
