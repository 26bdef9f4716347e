"""`pip install ./clients/python` into a scratch virtual environment works, and
`import dueq` there works from outside the repository."""

import os
import subprocess
import sys
import tempfile
import unittest

PACKAGE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


class Install(unittest.TestCase):
    def test_pip_install_then_import_from_elsewhere(self):
        with tempfile.TemporaryDirectory(prefix="dueq-venv-") as tmp:
            venv = os.path.join(tmp, "venv")
            # --system-site-packages: grpcio, protobuf, pip and setuptools come from
            # this Python (--without-pip: the venv's bundled setuptools may be too
            # old to build a wheel).
            self.run_ok([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv])
            python = os.path.join(venv, "bin", "python")
            # A copy, so the build leaves nothing in the checkout.
            src = os.path.join(tmp, "src")
            self.run_ok(["cp", "-r", PACKAGE, src])
            self.run_ok([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", src])
            code = (
                "import dueq, dueq.v1.jobs_pb2, os; "
                "assert 'site-packages' in dueq.__file__, dueq.__file__; "
                "dueq.Client('http://127.0.0.1:1'); "
                "print(dueq.__version__)"
            )
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            out = self.run_ok([python, "-c", code], cwd=tmp, env=env)
            self.assertEqual(out.strip(), "0.1.0")

    def run_ok(self, args, **kwargs):
        out = subprocess.run(args, capture_output=True, text=True, **kwargs)
        self.assertEqual(out.returncode, 0, f"{args}: {out.stderr}{out.stdout}")
        return out.stdout


if __name__ == "__main__":
    unittest.main()
