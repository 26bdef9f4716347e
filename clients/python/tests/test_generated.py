"""The committed src/dueq/v1 is what scripts/generate.py makes of proto/ now."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scripts", "generate.py")


class Generated(unittest.TestCase):
    def test_the_committed_code_equals_a_fresh_generation(self):
        out = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr + out.stdout)


if __name__ == "__main__":
    unittest.main()
