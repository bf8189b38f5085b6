"""The checks of `ageval lint`, registered in one table, `CHECKS`.

Each check is a small function in the module of its concern. A task check looks at one task
and yields `Hit`s with files relative to the task; a dataset check looks at all of them (ids
that collide, tasks that are copies). `lint_dataset` turns the hits into findings under the
rule's code and severity. Several rules follow Harbor's task checks (`pinned_dependencies`,
`tests_or_solution_in_image`, `check_dockerfile_references`, `check_test_sh`,
`check_privileged_containers`); docs/lint.md lists them all.
"""

from __future__ import annotations

from agevalx.lint.checks import (
    compose,
    ids,
    images,
    instructions,
    readable,
    secrets,
    timeouts,
    verifier,
)
from agevalx.lint.rule import Rule
from agevalx.lint.source import Format

BOTH: tuple[Format, ...] = ("ageval", "harbor")
AGEVAL: tuple[Format, ...] = ("ageval",)
HARBOR: tuple[Format, ...] = ("harbor",)

CHECKS: tuple[Rule, ...] = (
    Rule(
        "task_unreadable",
        "error",
        "the format's reader refuses the task (its task.yaml/task.toml, or a part Harbor needs)",
        BOTH,
        task_check=readable.task_unreadable,
    ),
    Rule(
        "base_image_unpinned",
        "warning",
        "a base or service image floats: no tag, the tag latest, and no digest",
        BOTH,
        task_check=images.base_image_unpinned,
    ),
    Rule(
        "dependency_unpinned",
        "warning",
        "the image pip-installs packages without an exact version",
        BOTH,
        task_check=images.dependency_unpinned,
    ),
    Rule(
        "verifier_visible_to_agent",
        "error",
        "tests/, solution/ or the evaluator are copied into the agent's image or placed in "
        "its working directory",
        BOTH,
        task_check=verifier.verifier_visible_to_agent,
    ),
    Rule(
        "verifier_needs_network",
        "warning",
        "the verifier (tests/ scripts, evaluator.py) installs or downloads when it scores",
        BOTH,
        task_check=verifier.verifier_needs_network,
    ),
    Rule(
        "literal_secret",
        "error",
        "a credential is written in a task, profiles or env file instead of a ${VAR} reference",
        BOTH,
        task_check=secrets.literal_secret,
        dataset_check=secrets.dataset_literal_secret,
    ),
    Rule(
        "task_id_mismatch",
        "error",
        "task.yaml's task_id differs from the task's directory",
        AGEVAL,
        task_check=ids.task_id_mismatch,
    ),
    Rule(
        "task_id_not_portable",
        "error",
        "the task id has characters outside A-Z a-z 0-9 . _ -",
        BOTH,
        task_check=ids.task_id_not_portable,
    ),
    Rule(
        "task_id_collision",
        "error",
        "two task ids differ only in case",
        BOTH,
        dataset_check=ids.task_id_collision,
    ),
    Rule(
        "instruction_missing",
        "error",
        "the agent's instruction (prompts/task.md without run.py, instruction.md) is missing "
        "or empty",
        BOTH,
        task_check=instructions.instruction_missing,
    ),
    Rule(
        "instruction_oversized",
        "warning",
        "an instruction file is larger than 1 MiB",
        BOTH,
        task_check=instructions.instruction_oversized,
    ),
    Rule(
        "timeout_missing",
        "warning",
        "a Harbor task sets no [agent] timeout_sec: the agent has no time limit",
        HARBOR,
        task_check=timeouts.timeout_missing,
    ),
    Rule(
        "timeout_invalid",
        "error",
        "a stage budget is zero, negative or not a number",
        BOTH,
        task_check=timeouts.timeout_invalid,
    ),
    Rule(
        "timeout_excessive",
        "warning",
        "a stage budget is over 24 h, or the verifier's is over 10 times the agent's",
        BOTH,
        task_check=timeouts.timeout_excessive,
    ),
    Rule(
        "docker_image_missing",
        "warning",
        "a Harbor task has only environment/Dockerfile, no docker_image (seed 003 requires one)",
        HARBOR,
        task_check=images.docker_image_missing,
    ),
    Rule(
        "image_source_missing",
        "error",
        "a Harbor task has neither docker_image nor environment/Dockerfile",
        HARBOR,
        task_check=images.image_source_missing,
    ),
    Rule(
        "compose_healthcheck_missing",
        "warning",
        "a compose service the agent depends on has no healthcheck",
        BOTH,
        task_check=compose.compose_healthcheck_missing,
    ),
    Rule(
        "privileged_container",
        "warning",
        "a compose service runs privileged",
        BOTH,
        task_check=compose.privileged_container,
    ),
    Rule(
        "reward_not_written",
        "warning",
        "nothing in a Harbor task's tests/ writes a reward file",
        HARBOR,
        task_check=verifier.reward_not_written,
    ),
    Rule(
        "duplicate_task",
        "warning",
        "two tasks have the same content under different ids",
        BOTH,
        dataset_check=ids.duplicate_task,
    ),
)
