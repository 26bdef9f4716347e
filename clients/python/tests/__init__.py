"""Unit tests of the dueq package (no service needed):

    python3 -m unittest discover -s clients/python/tests -t clients/python

They import `dueq` from clients/python/src (test_install installs it instead)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
