"""Read files out of a wheel or an npm tarball without extracting, installing or importing anything."""

from __future__ import annotations

import fnmatch
import json
import re
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rated.catalog.collect.fetch import FetchError, PackageSpec

__all__ = ["Archive", "LayoutError"]


class LayoutError(FetchError):
    """The package does not contain what the collector expects (its layout changed)."""


_LICENSE_HEADING = re.compile(r"^#+\s*(.*licen[sc]e.*?)\s*$", re.I | re.M)


class Archive:
    """The text members of one package archive (``.whl`` zip or npm ``.tgz``), read on demand.

    Tarballs are read in one pass: ``members`` is the list of names, and only files matching ``want``
    patterns (all by default) are kept in memory.
    """

    def __init__(self, path: str | Path, spec: PackageSpec, want: Iterable[str] = ("*",)):
        self.path = Path(path)
        self.spec = spec
        self._want = tuple(want)
        self._zip: zipfile.ZipFile | None = None
        self._tar_data: dict[str, bytes] = {}
        try:
            if self.path.suffix in {".whl", ".zip"}:
                self._zip = zipfile.ZipFile(self.path)
                self.members = [n for n in self._zip.namelist() if not n.endswith("/")]
            else:
                self.members = []
                with tarfile.open(self.path, "r:*") as tf:
                    for info in tf:
                        if not info.isfile():
                            continue
                        self.members.append(info.name)
                        if any(fnmatch.fnmatchcase(info.name, w) for w in self._want):
                            fh = tf.extractfile(info)
                            if fh is not None:
                                self._tar_data[info.name] = fh.read()
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
            raise FetchError(f"{spec}: cannot read archive {self.path} ({exc})") from None

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def glob(self, pattern: str) -> list[str]:
        """Member names matching a shell pattern (``*`` crosses folders), sorted."""
        return sorted(n for n in self.members if fnmatch.fnmatchcase(n, pattern))

    def has(self, name: str) -> bool:
        return name in self._tar_data or (self._zip is not None and name in self.members)

    def read_bytes(self, name: str) -> bytes:
        if self._zip is not None:
            try:
                return self._zip.read(name)
            except KeyError:
                raise LayoutError(
                    f"{self.spec}: {name} is missing from the package (has its layout changed?)"
                ) from None
        if name not in self._tar_data:
            raise LayoutError(f"{self.spec}: {name} is missing from the package (has its layout changed?)")
        return self._tar_data[name]

    def read_text(self, name: str) -> str:
        try:
            return self.read_bytes(name).decode("utf-8")
        except UnicodeDecodeError:
            raise LayoutError(f"{self.spec}: {name} is not UTF-8 text") from None

    def read_json(self, name: str) -> Any:
        try:
            return json.loads(self.read_text(name))
        except json.JSONDecodeError as exc:
            raise LayoutError(
                f"{self.spec}: {name} is not valid JSON (line {exc.lineno}: {exc.msg})"
            ) from None

    def license(self) -> str | None:
        """The declared license: wheel METADATA (expression, field or classifier) or package.json."""
        if self._zip is not None:
            meta = self.glob("*.dist-info/METADATA")
            declared = _wheel_license(self.read_text(meta[0])) if meta else None
            return declared or self._license_file_title()
        pkg = self.glob("*/package.json")
        if not pkg:
            return None
        declared = self.read_json(min(pkg, key=len)).get("license")
        if isinstance(declared, str) and declared.upper().startswith("SEE LICENSE IN"):
            target = f"{min(pkg, key=len).rsplit('/', 1)[0]}/{declared.split()[-1]}"
            if self.has(target):
                heading = [
                    h for h in _LICENSE_HEADING.findall(self.read_text(target)) if h.lower() != "license"
                ]
                if heading:
                    return heading[0]
            return declared
        return declared if isinstance(declared, str) else None

    def _license_file_title(self) -> str | None:
        """First line of a wheel's bundled LICENSE file (``MIT License``), when METADATA names none."""
        for name in self.glob("*.dist-info/licenses/*") + self.glob("*.dist-info/LICENSE*"):
            for line in self.read_bytes(name).decode("utf-8", "replace").splitlines():
                if line.strip():
                    return line.strip().strip("#").strip()[:80]
        return None


def _wheel_license(metadata: str) -> str | None:
    fields: dict[str, str] = {}
    classifiers: list[str] = []
    for line in metadata.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        if key == "Classifier" and value.strip().startswith("License ::"):
            classifiers.append(value.strip().split("::")[-1].strip())
        elif key in {"License-Expression", "License"} and key not in fields:
            fields[key] = value.strip()
    if fields.get("License-Expression"):
        return fields["License-Expression"]
    if classifiers:
        return classifiers[0]
    first = fields.get("License", "").splitlines()[0] if fields.get("License") else ""
    return first or None
