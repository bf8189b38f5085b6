"""`ageval lint`'s checks over a corpus of good and bad tasks in both formats.

data/<format>/good is a dataset every check stays silent on; data/<format>/bad/<code>/ is a
task that only the check `<code>` flags. Two cases are built here instead of kept on disk: a
case-insensitive id collision (which a macOS checkout could not hold) and an instruction over
1 MiB.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agevalx.errors import ConfigError
from agevalx.lint import CHECKS, lint_dataset
from agevalx.lint.checks.images import floating_image, unpinned_packages
from agevalx.lint.checks.secrets import secret_lines

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data"
DOCS = Path(__file__).resolve().parents[3] / "docs"
GOOD_TASK = {"ageval": "hello", "harbor": "hello-world"}
BUILT_HERE = ("task_id_collision", "instruction_oversized")
CASES = [
    (format_name, rule.code)
    for format_name in ("ageval", "harbor")
    for rule in CHECKS
    if format_name in rule.formats
]


def _bad_case_dir(format_name: str, code: str) -> Path | None:
    for case in sorted((DATA / format_name / "bad").iterdir()):
        if case.name.split("+")[0] == code:
            return case
    return None


def _good_copy(tmp_path: Path, format_name: str) -> tuple[Path, Path]:
    """A copy of the good dataset: its root and the directory its tasks are in."""
    root = tmp_path / "dataset"
    shutil.copytree(DATA / format_name / "good", root)
    return root, (root / "tasks" if format_name == "ageval" else root)


def _copy_good_task(tasks: Path, format_name: str, task_id: str) -> Path:
    """The good task again under `task_id`, with an instruction of its own (not a copy)."""
    target = tasks / task_id
    shutil.copytree(tasks / GOOD_TASK[format_name], target)
    if format_name == "ageval":
        config = target / "task.yaml"
        config.write_text(config.read_text().replace("task_id: hello", f"task_id: {task_id}"))
        instruction = target / "prompts" / "task.md"
    else:
        instruction = target / "instruction.md"
    instruction.write_text(f"{instruction.read_text()}\nThis is task {task_id}.\n")
    return instruction


def _dataset_with_bad_case(tmp_path: Path, format_name: str, code: str) -> tuple[Path, str]:
    root, tasks = _good_copy(tmp_path, format_name)
    if code == "task_id_collision":
        _copy_good_task(tasks, format_name, "Collide")
        _copy_good_task(tasks, format_name, "collide")
        return root, "collide"
    if code == "instruction_oversized":
        instruction = _copy_good_task(tasks, format_name, code)
        instruction.write_text("Read carefully.\n" + "x" * (1 << 20))
        return root, code
    case = _bad_case_dir(format_name, code)
    assert case is not None
    shutil.copytree(case, tasks / case.name)
    return root, case.name


@pytest.mark.parametrize("format_name", ["ageval", "harbor"])
def test_every_check_stays_silent_on_the_good_dataset(format_name: str) -> None:
    report = lint_dataset(DATA / format_name / "good")

    assert report.findings == []
    assert report.ok and report.tasks == 2 and report.format == format_name


@pytest.mark.parametrize(("format_name", "code"), CASES)
def test_each_check_fires_on_its_bad_case_and_nothing_else_does(
    tmp_path: Path, format_name: str, code: str
) -> None:
    root, bad_task = _dataset_with_bad_case(tmp_path, format_name, code)

    report = lint_dataset(root)

    in_bad_task = {finding.code for finding in report.findings if finding.task == bad_task}
    elsewhere = {finding.code for finding in report.findings if finding.task != bad_task}
    assert in_bad_task == {code}
    assert elsewhere <= {code}  # a collision or a duplicate names both of its tasks
    severity = next(rule.severity for rule in CHECKS if rule.code == code)
    assert {finding.severity for finding in report.findings} == {severity}
    assert report.ok == (severity == "warning")


@pytest.mark.parametrize(("format_name", "code"), CASES)
def test_the_corpus_has_a_bad_case_for_every_check(format_name: str, code: str) -> None:
    assert code in BUILT_HERE or _bad_case_dir(format_name, code) is not None


def test_findings_are_sorted_by_file_then_line(tmp_path: Path) -> None:
    root, tasks = _good_copy(tmp_path, "harbor")
    for code in ("timeout_invalid", "verifier_needs_network", "literal_secret"):
        case = _bad_case_dir("harbor", code)
        assert case is not None
        shutil.copytree(case, tasks / case.name)

    findings = lint_dataset(root).findings

    keys = [(finding.file, finding.line or 0) for finding in findings]
    assert keys == sorted(keys) and len(findings) == 3


def test_a_single_harbor_task_directory_is_linted_as_a_dataset() -> None:
    case = _bad_case_dir("harbor", "timeout_missing")
    assert case is not None

    report = lint_dataset(case)

    assert [(finding.code, finding.file) for finding in report.findings] == [
        ("timeout_missing", "task.toml")
    ]


def test_a_missing_directory_is_the_usual_coded_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        lint_dataset(tmp_path / "nowhere")
    assert raised.value.code == "dataset_not_found"


def test_a_directory_of_neither_format_is_a_coded_error(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    with pytest.raises(ConfigError) as raised:
        lint_dataset(tmp_path)
    assert raised.value.code == "lint_not_a_dataset"


def test_a_broken_ageval_yaml_is_the_readers_coded_error(tmp_path: Path) -> None:
    root, _ = _good_copy(tmp_path, "ageval")
    (root / "ageval.yaml").write_text("format: ageval.dataset/1\n")
    with pytest.raises(ConfigError) as raised:
        lint_dataset(root)
    assert raised.value.code == "missing_field"


@pytest.mark.parametrize(
    ("image", "floating"),
    [
        ("python", True),
        ("python:latest", True),
        ("ghcr.io/acme/app", True),
        ("localhost:5000/app", True),
        ("python:3.12-slim", False),
        ("python@sha256:abc", False),
        ("localhost:5000/app:1.0", False),
        ("ageval/base:bookworm", False),
        ("ageval/base:latest", False),
        ("${BASE_IMAGE}", False),
    ],
)
def test_floating_images(image: str, floating: bool) -> None:
    assert floating_image(image) is floating


@pytest.mark.parametrize(
    ("command", "unpinned"),
    [
        ("pip install numpy==1.26.4", []),
        ("pip install numpy pandas>=2", ["numpy", "pandas>=2"]),
        ("apt-get update && python -m pip install -r requirements.txt", []),
        ("uv pip install --system -i https://pypi.org/simple rich", ["rich"]),
        ("pip3 install --no-cache-dir ./wheels/app.whl git+https://x/y.git", []),
        ("pip install -U pip", ["pip"]),
    ],
)
def test_unpinned_pip_packages(command: str, unpinned: list[str]) -> None:
    assert unpinned_packages(command) == unpinned


@pytest.mark.parametrize(
    ("name", "line", "secret"),
    [
        ("profiles.yaml", "    api_key: ${OPENAI_API_KEY}", False),
        ("task.toml", 'OPENAI_API_KEY = "${OPENAI_API_KEY:-}"', False),
        ("profiles.yaml", "    api_key: abc123def", True),
        ("agent.env", "GITHUB_TOKEN=abc123def", True),
        ("Dockerfile", "ENV DB_PASSWORD=hunter22", True),
        ("notes.md", "api_key: abc123def", False),  # prose is not a config file
        ("run.py", "key = 'AKIAIOSFODNN7EXAMPLE'", True),  # a credential's shape anywhere
        ("task.yaml", "max_tokens: 4000", False),
        ("compose.yaml", "      POSTGRES_PASSWORD: ${DB_PASSWORD}", False),
    ],
)
def test_literal_secrets_and_references(name: str, line: str, secret: bool) -> None:
    found = list(secret_lines(name, line + "\n"))
    assert bool(found) is secret
    assert all("abc123def" not in what and "hunter22" not in what for _, what in found)


def test_docs_list_every_check_with_its_severity() -> None:
    text = (DOCS / "lint.md").read_text(encoding="utf-8")
    for rule in CHECKS:
        assert f"| `{rule.code}` | {rule.severity} |" in text, rule.code


def test_a_repositorys_own_tests_in_the_workdir_are_the_agents(tmp_path: Path) -> None:
    root, tasks = _good_copy(tmp_path, "ageval")
    repo = tasks / "hello" / "data" / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_app.py").write_text("def test_app():\n    pass\n")
    dockerfile = tasks / "hello" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN ./scripts/run_test.sh --dry\n")

    assert lint_dataset(root).findings == []


def test_a_verifier_directory_in_the_workdir_is_one_finding(tmp_path: Path) -> None:
    root, tasks = _good_copy(tmp_path, "ageval")
    for name in ("solve.py", "expected.json"):
        path = tasks / "hello" / "data" / "solution" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")

    findings = lint_dataset(root).findings

    assert [(f.code, f.file) for f in findings] == [
        ("verifier_visible_to_agent", "tasks/hello/data/solution/")
    ]


def test_a_secret_the_line_scan_misses_is_still_found_by_agevals_rule(tmp_path: Path) -> None:
    root, tasks = _good_copy(tmp_path, "ageval")
    config = tasks / "hello" / "task.yaml"
    config.write_text(config.read_text() + "parameters: {main_environment: {DB_PASSWORD: x1}}\n")

    findings = lint_dataset(root).findings

    assert [(f.code, f.file, f.line) for f in findings] == [
        ("literal_secret", "tasks/hello/task.yaml", None)
    ]
    assert "parameters.main_environment.DB_PASSWORD" in findings[0].message


def test_garbage_files_are_findings_not_crashes(tmp_path: Path) -> None:
    root, tasks = _good_copy(tmp_path, "harbor")
    broken = tasks / "broken"
    shutil.copytree(tasks / "hello-world", broken)
    (broken / "task.toml").write_text("[agent\ntimeout_sec = = 1\n")
    (broken / "instruction.md").write_bytes(b"\xff\xfe\x00binary")
    (broken / "environment" / "Dockerfile").write_bytes(b"\x00\x01FROM")

    report = lint_dataset(root)

    assert {(f.task, f.code) for f in report.findings} == {("broken", "task_unreadable")}


def test_an_ageval_dataset_whose_tasks_root_is_the_root(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    shutil.copytree(DATA / "ageval" / "good" / "tasks", root)
    (root / "ageval.yaml").write_text(
        "format: ageval.dataset/1\ndataset_id: acme/flat\nversion: 1\ntasks: {root: .}\n"
    )
    (root / "hello" / "prompts" / "task.md").unlink()

    findings = lint_dataset(root).findings

    assert [(f.code, f.file) for f in findings] == [
        ("instruction_missing", "hello/prompts/task.md")
    ]


def test_the_check_codes_and_severities_are_stable() -> None:
    # Scripts match on these codes: renaming one, or changing its severity, is a break.
    assert [(rule.code, rule.severity) for rule in CHECKS] == [
        ("task_unreadable", "error"),
        ("base_image_unpinned", "warning"),
        ("dependency_unpinned", "warning"),
        ("verifier_visible_to_agent", "error"),
        ("verifier_needs_network", "warning"),
        ("literal_secret", "error"),
        ("task_id_mismatch", "error"),
        ("task_id_not_portable", "error"),
        ("task_id_collision", "error"),
        ("instruction_missing", "error"),
        ("instruction_oversized", "warning"),
        ("timeout_missing", "warning"),
        ("timeout_invalid", "error"),
        ("timeout_excessive", "warning"),
        ("docker_image_missing", "warning"),
        ("image_source_missing", "error"),
        ("compose_healthcheck_missing", "warning"),
        ("privileged_container", "warning"),
        ("reward_not_written", "warning"),
        ("duplicate_task", "warning"),
    ]
