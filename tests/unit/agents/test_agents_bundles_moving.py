"""`ageval agents export/import`: bundles move whole, and an archive cannot write outside."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from agevalx.agents import bundles, catalog
from agevalx.cli import main
from agevalx.errors import AgevalError
from agevalx.operations.agents import export_bundles, import_bundles, list_agents

pytestmark = pytest.mark.unit


def _fake_pi(root: Path) -> Path:
    """A bundle folder for pi as a build leaves it (files, a relative link, the marker)."""
    spec = catalog.agents()["pi"].bundle
    platform = bundles.default_platform()
    key = bundles.bundle_key(spec, platform)
    work = root / key
    (work / "node_modules" / "pi-acp" / "dist").mkdir(parents=True)
    (work / "node_modules" / "pi-acp" / "dist" / "index.js").write_text("console.log(1)\n")
    (work / "bin").mkdir()
    (work / "bin" / "pi").write_text("#!/bin/sh\n")
    (work / "node").symlink_to("node_modules/pi-acp/dist/index.js")
    info = bundles._marker(spec, key, platform, work, 1.0)
    (work / bundles.MARKER).write_text(json.dumps(info))
    return work


@pytest.fixture
def bundles_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def point(name: str) -> Path:
        path = tmp_path / name
        path.mkdir(exist_ok=True)
        monkeypatch.setenv(bundles.BUNDLES_ENV, str(path))
        return path

    return point


def test_an_exported_bundle_imports_whole_on_another_machine(bundles_at, tmp_path):
    source = bundles_at("here")
    built = _fake_pi(source)
    archive = tmp_path / "out" / "bundles.tar"

    assert export_bundles(["pi"], archive) == [{"name": "pi", "key": built.name}]
    assert [info.built for info in list_agents() if info.name == "pi"] == [True]

    target = bundles_at("there")
    assert [info.built for info in list_agents() if info.name == "pi"] == [False]
    (imported,) = import_bundles(archive)
    assert (imported["name"], imported["imported"]) == ("pi", True)
    copy = target / built.name
    assert (copy / "bin" / "pi").read_text() == "#!/bin/sh\n"
    assert (copy / "node").is_symlink()
    assert bundles.find_bundle("pi") is not None
    (again,) = import_bundles(archive)
    assert again["imported"] is False, "a bundle already here is left alone"


def test_exporting_a_bundle_that_is_not_built_says_how_to_build_it(bundles_at, tmp_path):
    bundles_at("empty")
    with pytest.raises(AgevalError) as caught:
        export_bundles(["pi"], tmp_path / "x.tar")
    assert caught.value.code == "bundle_not_built"
    assert "ageval agents build pi" in (caught.value.hint or "")


def _archive(path: Path, key: str, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    index = {
        "format": "ageval.bundles/1",
        "platform": bundles.default_platform(),
        "bundles": [{"name": "pi", "key": key}],
    }
    with tarfile.open(path, "w") as archive:
        data = json.dumps(index).encode()
        head = tarfile.TarInfo("ageval-bundles.json")
        head.size = len(data)
        archive.addfile(head, io.BytesIO(data))
        for member, content in members:
            if content is not None:
                member.size = len(content)
            archive.addfile(member, io.BytesIO(content) if content is not None else None)
    return path


def _file(name: str, content: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), content


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    member = tarfile.TarInfo(name)
    member.type = tarfile.SYMTYPE
    member.linkname = target
    return member, None


@pytest.mark.parametrize(
    "members",
    [
        [_file("../escaped")],
        [_file("{key}/../../escaped")],
        [_file("/etc/escaped")],
        [_file("another-key/file")],
        [_link("{key}/out", "../../../etc/passwd")],
        [_link("{key}/abs", "/etc/passwd")],
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "unlisted-folder", "link-out", "absolute-link"],
)
def test_an_archive_member_leaving_its_bundle_is_refused_and_nothing_is_written(
    bundles_at, tmp_path, members
):
    root = bundles_at("target")
    key = bundles.bundle_key(catalog.agents()["pi"].bundle, bundles.default_platform())
    for member, _ in members:
        member.name = member.name.replace("{key}", key)
    archive = _archive(tmp_path / "evil.tar", key, members)

    with pytest.raises(AgevalError) as caught:
        import_bundles(archive)

    assert caught.value.code == "bundle_archive_invalid"
    assert not (tmp_path / "escaped").exists()
    assert [p.name for p in root.iterdir()] == [], "nothing is published or left behind"


def test_a_bundle_whose_files_differ_from_its_marker_is_refused(bundles_at, tmp_path):
    source = bundles_at("here")
    built = _fake_pi(source)
    (built / "bin" / "extra").write_text("slipped in after the build\n")
    archive = tmp_path / "bundles.tar"
    export_bundles(["pi"], archive)
    target = bundles_at("there")

    with pytest.raises(AgevalError) as caught:
        import_bundles(archive)

    assert caught.value.code == "bundle_archive_invalid"
    assert "marker counts" in caught.value.message
    assert list(target.iterdir()) == []


def test_an_unknown_bundle_key_or_a_file_that_is_no_tar_is_refused(bundles_at, tmp_path):
    bundles_at("target")
    with pytest.raises(AgevalError) as caught:
        import_bundles(_archive(tmp_path / "a.tar", "0" * 32, [_file("0" * 32 + "/f")]))
    assert "not one this ageval builds" in caught.value.message
    not_a_tar = tmp_path / "b.tar"
    not_a_tar.write_text("hello")
    with pytest.raises(AgevalError) as caught:
        import_bundles(not_a_tar)
    assert caught.value.code == "bundle_archive_invalid"


def test_ageval_agents_lists_the_catalog_as_json(bundles_at, capsys):
    bundles_at("empty")
    assert main(["agents", "--json"]) == 0
    listed = {item["name"]: item for item in json.loads(capsys.readouterr().out)["agents"]}
    assert set(listed) == set(catalog.agents())
    assert listed["pi"]["built"] is False and listed["pi"]["version"] == "1.6.0"
    assert listed["pi"]["api"] == "OpenAI chat completions"
    assert main(["agents", "build", "nobody", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "unknown_agent"
