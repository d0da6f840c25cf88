"""What the fixture generators' tests share: which of a generator's libraries are missing, the
generator loaded from its file, and the check that it writes the committed fixtures byte for
byte."""

import importlib.util
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType


def missing(libraries: dict[str, str]) -> list[str]:
    """The packages (of {package: module it installs}) whose module cannot be imported."""

    def importable(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False

    return [package for package, module in libraries.items() if not importable(module)]


def _installed(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def generator(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_writes_committed(
    written: dict[str, bytes], committed: dict[str, bytes], manifest: dict, regenerate: str
) -> None:
    """The files a generator wrote are the committed ones, byte for byte but for the version
    labels of packages installed in other versions than wrote them; a failure names the files,
    the command that regenerates them, and any package whose installed version is not the one
    the manifest says wrote them."""
    produced_by = {
        package: (fixture_version, _installed(package))
        for shape in manifest["shapes"].values()
        for package, fixture_version in shape["produced_by"].items()
        if _installed(package) != fixture_version
    }
    why = (
        f"; the fixtures were written with other versions (package: (fixtures, installed)): "
        f"{produced_by}"
        if produced_by
        else ""
    )
    unwritten, uncommitted = sorted(committed.keys() - written), sorted(written.keys() - committed)
    assert not unwritten and not uncommitted, (
        f"the generator writes {uncommitted} too and not {unwritten}: run {regenerate}{why}"
    )
    labelled = {
        name: _labelled_installed(content, produced_by) for name, content in committed.items()
    }
    stale = [name for name in written if written[name] != labelled[name]]
    assert not stale, f"{stale} differ from what the generator writes: run {regenerate}{why}"


def _labelled_installed(content: bytes, produced_by: dict[str, tuple[str, str | None]]) -> bytes:
    """``content`` with each ``"package": "version"`` label of a package installed in another
    version relabelled with the installed one: a library's new release that writes the same
    fixtures fails no test (its version label is all that differs); one that writes anything
    else does."""
    for package, (fixture_version, installed) in produced_by.items():
        if installed is not None:
            content = content.replace(
                f'"{package}": "{fixture_version}"'.encode(), f'"{package}": "{installed}"'.encode()
            )
    return content
