"""The package builds and installs offline: the build backend in _build/
(standard library only) makes a wheel with the package and its metadata,
`pip install` of this folder works without an index, and neither leaves
anything in the source tree."""

import hashlib
import base64
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "_build"))
import agentmem_build  # noqa: E402


def tree():
    out = set()
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        out.update(os.path.relpath(os.path.join(d, f), ROOT) for f in files if not f.endswith(".pyc"))
    return out


class Packaging(unittest.TestCase):
    def test_wheel(self):
        before = tree()
        with tempfile.TemporaryDirectory() as out:
            name = agentmem_build.build_wheel(out)
            self.assertEqual(name, "agentmem-0.2.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(out, name)) as z:
                names = set(z.namelist())
                for want in ("agentmem/__init__.py", "agentmem/client.py", "agentmem/types.py",
                             "agentmem-0.2.0.dist-info/METADATA", "agentmem-0.2.0.dist-info/WHEEL",
                             "agentmem-0.2.0.dist-info/RECORD"):
                    self.assertIn(want, names)
                self.assertFalse(any(n.startswith("tests/") for n in names), names)
                meta = z.read("agentmem-0.2.0.dist-info/METADATA").decode()
                self.assertIn("Name: agentmem\n", meta)
                self.assertIn("Requires-Python: >=3.11\n", meta)
                for line in z.read("agentmem-0.2.0.dist-info/RECORD").decode().splitlines():
                    path, digest, size = line.split(",")
                    if not digest:
                        continue
                    data = z.read(path)
                    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, int(size)), (want, len(data)), path)
            self.assertTrue(agentmem_build.build_sdist(out).endswith(".tar.gz"))
        self.assertEqual(tree(), before)

    def test_pip_installs_offline(self):
        before = tree()
        with tempfile.TemporaryDirectory() as out:
            site = os.path.join(out, "site")
            env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}
            if importlib.util.find_spec("pip"):
                r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--target", site, ROOT],
                                   capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            else:
                # No pip (a Python without it): install the wheel as pip
                # would, by unpacking it.
                print("pip is not installed: the wheel is unpacked instead", file=sys.stderr)
                with zipfile.ZipFile(os.path.join(out, agentmem_build.build_wheel(out))) as z:
                    z.extractall(site)
            # Imported from the install, not from the source tree.
            r = subprocess.run([sys.executable, "-c", "import agentmem; print(agentmem.__file__, agentmem.__version__, len(agentmem.types.OPERATIONS))"],
                               capture_output=True, text=True, cwd=out, env={**env, "PYTHONPATH": site})
            self.assertEqual(r.returncode, 0, r.stderr)
            path, version, ops = r.stdout.split()
            self.assertTrue(path.startswith(site), path)
            self.assertEqual(version, "0.2.0")
            self.assertGreater(int(ops), 40)
        self.assertEqual(tree(), before)


if __name__ == "__main__":
    unittest.main()
