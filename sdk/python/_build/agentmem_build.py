"""A PEP 517 build backend for the agentmem package, standard library only,
so that `pip install ./sdk/python` builds offline (no setuptools fetched).

It writes a pure-Python wheel of the agentmem/ package (build_wheel), an
editable wheel that points at this folder (build_editable, PEP 660) and a
source archive (build_sdist), with the metadata of pyproject.toml's
[project] table. It writes nothing into the source tree.
"""

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "agentmem"


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
        f"Requires-Python: {p.get('requires-python', '>=3')}",
    ]
    if "license" in p:
        lines.append(f"License: {p['license'].get('text', '')}")
    readme = ROOT / p.get("readme", "README.md")
    body = readme.read_text() if readme.exists() else ""
    if body:
        lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body


def _dist_info():
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info", p["name"], p["version"]


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, files):
    info, name, version = _dist_info()
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: agentmem_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/top_level.txt"] = (PACKAGE + "\n").encode()
    record = [_record_line(n, d) for n, d in sorted(files.items())] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for n in sorted(files):
            zi = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, files[n], zipfile.ZIP_DEFLATED)
    return wheel


def _package_files():
    out = {}
    for f in sorted((ROOT / PACKAGE).rglob("*.py")):
        out[f.relative_to(ROOT).as_posix()] = f.read_bytes()
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts this folder on sys.path: the package is imported
    # from the source tree.
    return _write_wheel(wheel_directory, {f"_{PACKAGE}_editable.pth": (str(ROOT) + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    _, name, version = _dist_info()
    base = f"{name}-{version}"
    members = {"pyproject.toml": (ROOT / "pyproject.toml").read_bytes(), "PKG-INFO": _metadata().encode()}
    if (ROOT / "README.md").exists():
        members["README.md"] = (ROOT / "README.md").read_bytes()
    members.update(_package_files())
    members["_build/agentmem_build.py"] = Path(__file__).read_bytes()
    archive = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, archive), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for n in sorted(members):
            ti = tarfile.TarInfo(f"{base}/{n}")
            ti.size, ti.mode, ti.mtime = len(members[n]), 0o644, 0
            t.addfile(ti, io.BytesIO(members[n]))
    return archive
