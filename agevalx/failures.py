"""The failure catalogue: every error code ageval raises, and whose failure it is.

Each code belongs to exactly one class:

- `agent`: the attempt ran and this is its outcome; it counts as not passed, like a FAIL.
- `task`: the input is broken (the task, its Dockerfile or verifier, the dataset, the
  profiles, the command line); fixing it is the author's job. It counts as not passed.
- `infrastructure`: the machine, the Docker engine, the network, the model upstream, the
  cache or ageval itself failed; not the agent's fault. `ageval run` retries such an attempt
  (`--retry-infra`), and one still failing is reported apart and left out of pass@k unless
  `--count-infra-as-fail`.

A unit test scans the source for every code it raises and fails on one missing here;
docs/failures.md lists the catalogue (`python -m agevalx.failures` prints its table).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

FailureClass = Literal["agent", "task", "infrastructure"]
FAILURE_CLASSES: tuple[FailureClass, ...] = ("agent", "task", "infrastructure")

UNKNOWN_CLASS: FailureClass = "agent"
"""The class of a code not in the catalogue: the conservative choice, the attempt counts."""


@dataclass(frozen=True)
class Failure:
    """One code of the catalogue."""

    code: str
    failure_class: FailureClass
    meaning: str


_AGENT = {
    "agent_crashed": "the agent process exited or was killed before it answered",
    "agent_error": "the agent answered a request with an error",
    "agent_protocol_error": "the agent spoke malformed or unsupported ACP",
    "agent_start_failed": "the agent program could not be started in the attempt container",
    "agent_timeout": "the agent did not answer within its timeout",
    "gateway_token_unknown": "a request reached the model gateway with an unknown token",
    "harbor_agent_failed": "Harbor's agent failed or ended without an answer",
    "harbor_logs_replaced": "the run replaced Harbor's log directories with links or files",
    "model_traffic_diverged": "a replayed agent sent a request the recording does not answer",
    "model_traffic_exhausted": "a replayed agent made more model requests than were recorded",
    "unsafe_archive": "a file the attempt left escapes its directory in the snapshot",
    "unsafe_path": "the attempt left a link or a file where ageval writes a directory",
    "verifier_disabled": "not a failure: the task disables its verifier, the attempt is DONE",
}

_TASK = {
    "acp_missing_entry": "an acp profile has no options.entry",
    "agent_base_url_missing": "the agent needs a base_url in its profile",
    "agent_config_failed": "the agent's configuration could not be written into its HOME",
    "agent_entry_missing": "the role names no agent entry",
    "agent_model_missing": "the agent needs a model id in its profile",
    "agent_options_invalid": "an agent option in the profile is not one the agent knows",
    "agent_profiles_conflict": "--agent and --profiles were given together",
    "agent_provider_unsupported": "the agent cannot talk to the profile's provider",
    "agent_required": "the dataset has no profiles.yaml and no --agent was given",
    "agent_script_invalid": "the scripted agent's script is not a valid list of steps",
    "agent_script_missing": "the scripted agent's role has no options.script",
    "always_k_cli_only": "a key that only the command line may set is in a config file",
    "bundle_archive_invalid": "an exported agent bundle archive is not one this ageval reads",
    "bundle_kind_unknown": "an agent bundle of a kind no builder makes",
    "bundle_spec_invalid": "an agent bundle's spec asks for a runtime it cannot carry",
    "bundle_unknown": "no agent bundle has that name",
    "build_names_required": "`ageval agents build` needs names or --all, not both",
    "cache_invalid_glob": "a glob in the config is not a relative POSIX pattern",
    "cache_not_a_directory": "a path to store as a tree is not a directory",
    "cache_source_unreadable": "a file of the dataset cannot be read",
    "cache_unencodable_path": "a file name of the dataset is not valid UTF-8",
    "cluster_needs_remote": "--cluster needs a shared remote cache (--remote)",
    "cluster_remote_read_only": "the cluster's remote was added read-only",
    "cluster_job_limit_unsupported": "--max-cost and --max-tokens cannot run on a cluster",
    "cluster_resume_unsupported": "--resume cannot run on a cluster",
    "cluster_tasks_outside_dataset": "a cluster run names tasks outside the dataset directory",
    "collect_command_failed": "an evaluation.collect command exited non-zero",
    "collect_path_missing": "an evaluation.collect path is not in the container",
    "collect_service_missing": "an evaluation.collect entry names a compose service not running",
    "collect_timeout": "an evaluation.collect command did not finish in time",
    "compose_failed": "docker compose refused the task's compose.yaml",
    "compose_missing": "the task's network_mode needs environment/compose.yaml",
    "container_stopped": "the container stopped while the verifier's tests/test.sh ran",
    "dataset_name_invalid": "--dataset-name is not a name",
    "dataset_not_found": "the dataset directory does not exist",
    "dataset_required": "no dataset directory (or Harbor job config listing tasks) was given",
    "default_run_needs_one_profile": "a task without run.py has more than one agent profile",
    "egress_network_mode_unfenced": "egress: llm cannot fence a container sharing a network",
    "empty_value": "a flag was given an empty value",
    "env_params_invalid": "--env-params is not a valid JSON object of known fields",
    "environment_timeout": "the task's environment/setup.sh outlived environment_seconds",
    "evaluate_timeout": "the task's evaluator did not finish within evaluate_seconds",
    "evaluation_environments_need_isolated_host": "scoring environments need an isolated host",
    "evaluator_error": "the task's evaluator raised or gave no valid result",
    "execution_params_invalid": "--execution-params is not a valid JSON object of known fields",
    "file_not_found": "the evaluator asked a scoring host for a file that is not there",
    "file_too_large": "an input file is larger than ageval reads",
    "forbidden_role_field": "a task's role sets a field only profiles.yaml may set",
    "forbidden_root_key": "ageval.yaml sets a key it may not",
    "forbidden_task_key": "task.yaml sets a key it may not",
    "fork_checkpoint_partial": "a fork of a Harbor task from a checkpoint before its last",
    "fork_needs_checkpoint": "--fork needs --checkpoint",
    "fork_source_missing": "the forked attempt's run is not in the cache",
    "fork_task_mismatch": "the forked attempt belongs to another task",
    "harbor_agent_model_missing": "Harbor's agent needs a model and an endpoint",
    "harbor_agent_needs_network": "Harbor's agent needs the network, which the run does not give",
    "harbor_agent_unknown": "Harbor has no agent of that name",
    "harbor_agent_unsupported": "ageval cannot run that Harbor agent",
    "harbor_dataset_not_found": "the Harbor dataset directory does not exist",
    "harbor_duplicate_task_name": "two Harbor tasks have the same name",
    "harbor_env_unresolved": "a Harbor task references an unset ${VAR}",
    "harbor_git_source_unsupported": "the job config takes a dataset or task from git",
    "harbor_healthcheck_failed": "the Harbor task's healthcheck failed",
    "harbor_healthcheck_timeout": "the Harbor task's healthcheck timed out",
    "harbor_image_build_failed": "the Harbor task's image does not build",
    "harbor_install_only_unsupported": "the job config asks for install-only agents",
    "harbor_job_config_invalid": "the Harbor job config breaks its format",
    "harbor_missing_entry": "a harbor profile has no options.entry",
    "harbor_multi_step_unsupported": "the Harbor task has several steps",
    "harbor_multiple_agents_unsupported": "the job config names several agents",
    "harbor_n_attempts_unsupported": "the job config sets n_attempts (use -k)",
    "harbor_no_image": "the Harbor task has neither a Dockerfile nor an image",
    "harbor_no_task_matched": "no Harbor task matches the filter",
    "harbor_no_tasks": "the Harbor dataset has no tasks",
    "harbor_not_a_task": "the directory is not a Harbor task",
    "harbor_options_on_ageval_dataset": "Harbor options were given for an ageval dataset",
    "harbor_package_source_unsupported": "the job config takes a dataset or task package",
    "harbor_registry_source_unsupported": "the job config takes a registry dataset",
    "harbor_task_invalid": "the Harbor task's task.toml breaks its format",
    "harbor_task_not_found": "the job config names a Harbor task that does not exist",
    "harbor_verifier_compose_unsupported": "the Harbor verifier needs its own compose services",
    "harbor_verifier_import_failed": "the Harbor verifier's import path does not import",
    "harbor_verifier_import_path_unsupported": "the job config sets a verifier import path",
    "harbor_verifier_judge_ambiguous": "the Harbor verifier's LLM judge is ambiguous",
    "harbor_verifier_judge_invalid": "the Harbor verifier's LLM judge is invalid",
    "harbor_verifier_not_a_verifier": "the Harbor verifier import path names no verifier",
    "harbor_windows_unsupported": "the Harbor task needs Windows",
    "illegal_top_level_dir": "a task has a directory ageval does not allow at its top level",
    "image_build_failed": "the task's Dockerfile does not build",
    "invalid_base_url": "a base URL is not an http(s) URL",
    "invalid_dataset_id": "dataset_id is not a valid id",
    "invalid_evaluation": "the task's evaluator wrote a result that breaks its format",
    "invalid_format": "a config file breaks its format",
    "invalid_engine_timeout": "AGEVAL_ENGINE_TIMEOUT is not a number of seconds above 0",
    "invalid_job_limit": "--max-cost or --max-tokens is not more than 0",
    "invalid_k": "-k is below 1",
    "invalid_overlay_path": "an overlay path is not inside overlays/",
    "invalid_owner_scope": "$AGEVAL_OWNER_SCOPE is not a scope name",
    "invalid_path": "a path in the config leaves its root",
    "invalid_python_version": "python_version is not one ageval runs",
    "invalid_retry_infra": "--retry-infra is below 0",
    "invalid_standby_setting": "AGEVAL_STANDBY is not auto, on or off",
    "invalid_value": "a config value is not valid",
    "invalid_yaml": "a config file is not valid YAML",
    "job_not_found": "the cache holds no job of that dataset or id",
    "k_too_large": "-k asks for more attempts per task than allowed",
    "lint_errors": "ageval run refused a job whose tasks have lint errors (--no-lint runs it)",
    "lint_not_a_dataset": "ageval lint was given a directory of neither task format",
    "missing_dockerfile": "environment: docker needs environment/Dockerfile",
    "missing_evaluator": "the task has no evaluator.py",
    "missing_field": "a config file lacks a required field",
    "missing_file": "a config file does not exist",
    "missing_profiles": "the task names an agent profile but there is no profiles.yaml",
    "missing_prompt": "a task without run.py has no prompt file",
    "missing_solution": "the oracle agent needs solution/, which does not exist",
    "mock_faults_invalid": "the mock model's fault list cannot be read or is malformed",
    "mock_script_invalid": "the mock model's script cannot be read",
    "model_not_object": "a profile's model is a string, not an object",
    "model_option_flattened": "a profile sets a model option outside `model:`",
    "model_pin_missing": "reasoning.effort: max needs a pin for the model",
    "model_pin_no_efforts": "the model's pin lists no reasoning efforts",
    "model_required": "the agent needs a model (--model)",
    "model_requires_agent": "--model needs --agent",
    "model_traffic_malformed": "a line of the recorded model traffic is not an exchange",
    "model_traffic_missing": "the recorded model traffic cannot be read",
    "no_recovery_state": "the attempt has no activity.jsonl to replay",
    "no_tasks": "the dataset has no tasks",
    "node_not_found": "the plan has no node of that name",
    "not_a_regular_file": "an input path is not a regular file",
    "oracle_solution_missing": "the task has no solution script for the oracle agent",
    "overlay_not_found": "an overlay is not a file inside overlays/",
    "path_escape": "tasks.root leaves the dataset directory",
    "profile_choice_needed": "profiles.yaml has several profiles and none was chosen",
    "reasoning_effort_unknown": "the model has no such reasoning effort",
    "remote_config_invalid": "the remote configuration cannot be read",
    "remote_exists": "a remote of that name is already configured",
    "remote_invalid_option": "a remote's option is not valid",
    "remote_invalid_url": "a remote's URL is not valid",
    "remote_not_configured": "no remote was given",
    "remote_not_found": "no remote has that name",
    "remote_read_only": "the remote was added read-only",
    "replay_lock_differs": "the task locks otherwise than the replayed attempt's did",
    "report_invalid_file": "a summary or result file of the job breaks its format",
    "report_job_conflict": "--job was given for a source that is already a job",
    "report_missing_result": "the job indexes a result.json that does not exist",
    "report_no_results": "the dataset has no results to report",
    "report_source_not_found": "the report's source does not exist",
    "report_stale_result": "a result was re-evaluated after the job recorded it",
    "report_unknown_format": "no report format has that name",
    "report_unknown_job": "the dataset has no job of that id",
    "resume_config_mismatch": "the attempt's locked configuration changed since it started",
    "resume_sealed": "the attempt to resume is sealed (its result.json exists)",
    "resume_task_mismatch": "the resumed attempt belongs to another task",
    "resume_unknown_attempt": "--resume names no attempt",
    "retry_interval_not_configurable": "a profile sets retry_interval_seconds, not a setting",
    "run_py_call_failed": "what run.py asked of ageval failed (the run ends with the cause)",
    "run_py_channel_invalid": "run.py's harness sent a line too long for the channel",
    "run_py_failed": "the task's run.py raised",
    "run_py_request_invalid": "run.py's harness sent a request ageval cannot answer",
    "scoring_image_missing": "the task names a scoring image it does not have",
    "secret_in_config": "a literal secret is written in a config file",
    "secret_unset": "the environment variable a config references is not set",
    "setup_failed": "the task's environment/setup.sh exited non-zero",
    "task_id_mismatch": "task_id differs from the task's directory name",
    "task_not_found": "the dataset has no task of that id",
    "too_many_attempts": "tasks x k exceed the attempts one command plans",
    "unknown_agent": "no agent has that name",
    "unknown_checkpoint": "the attempt has no checkpoint with that seq",
    "unknown_field": "a config file has a key its format does not know",
    "unknown_judge_role": "evaluation.judge names a role the task lacks",
    "unknown_profile": "profiles.yaml has no profile of that name",
    "unknown_role": "run.py asked for a role the task does not have",
    "unknown_scoring_host": "the evaluator asked for a scoring environment the task lacks",
    "unreadable_file": "an input file cannot be read",
    "unsupported_file_type": "a task holds something other than files, directories, links",
    "usage_error": "the command line is wrong",
    "verifier_failed": "the Harbor verifier raised",
    "verifier_result_invalid": "the Harbor verifier wrote no valid reward",
    "verifier_timeout": "the Harbor verifier did not finish in time",
    "view_bundle_not_a_directory": "the viewer's --bundle target is not a directory",
    "view_bundle_not_empty": "the viewer's --bundle target holds other files",
    "view_no_results": "the job directory has no summary to view",
    "view_port_with_bundle": "--port and --bundle were given together",
    "view_source_not_found": "the viewer's source is not a directory",
}

_INFRASTRUCTURE = {
    "agent_bundle_failed": "the agent's bundle could not be built on this machine",
    "bundle_apt_missing": "building a bundle needs apt-get and dpkg-deb on this machine",
    "bundle_build_failed": "building an agent bundle failed on this machine",
    "bundle_not_built": "the agent bundle is not built on this machine",
    "bundle_npm_missing": "building a bundle needs npm on this machine",
    "bundle_pip_missing": "building a bundle needs pip on this machine",
    "bundle_platform_unsupported": "no agent bundle exists for this machine's platform",
    "cache_corrupt_object": "a cached object does not match its digest",
    "cache_invalid_action": "a cached action entry is malformed",
    "cache_invalid_name": "a cache object name is not a digest",
    "cache_invalid_ref": "a cache ref is malformed",
    "cache_invalid_tree": "a cached tree is not in canonical form",
    "cache_lock_unusable": "the cache's lock file cannot be used",
    "cache_missing_object": "an object the cache needs is missing",
    "cache_restore_target_not_empty": "a tree was to be restored into a non-empty directory",
    "cache_source_changed": "a file changed while the cache stored it",
    "cache_unsafe_path": "a cached tree entry would be written outside its directory",
    "cache_unwritable": "the cache cannot be written",
    "cache_version_mismatch": "the cache has a layout this ageval does not read",
    "cached_result_invalid": "a cached evaluation breaks its format",
    "cluster_checkout_failed": "a cluster worker could not restore the dataset",
    "cluster_entry_unusable": "a cluster worker stored an entry that is unusable",
    "cluster_has_no_docker": "no node of the Ray cluster offers Docker",
    "cluster_input_missing": "a cluster worker's input is not on the remote",
    "cluster_needs_ray": "--cluster needs Ray, which is not installed",
    "cluster_release_mismatch": "a cluster worker runs another ageval release",
    "cluster_unreachable": "the Ray cluster cannot be reached",
    "cluster_upload_failed": "a cluster worker could not upload what it computed",
    "cluster_worker_lost": "a node was lost twice with its cluster worker",
    "collect_copy_failed": "copying an evaluation.collect entry out of the container failed",
    "compose_unavailable": "the docker CLI (compose) is not installed",
    "copy_failed": "copying files into a container failed",
    "disk_full": "the disk filled up writing the cache or a snapshot",
    "docker_unavailable": "the Docker engine cannot be reached or failed",
    "engine_unavailable": "the Docker engine stopped answering or restarted",
    "environment_gpu_unavailable": "the task needs a GPU this machine does not offer",
    "environment_lost": "the attempt container died or was removed by someone else",
    "environment_start_failed": "the attempt container could not be started",
    "evaluator_runtime_unavailable": "no image to take the evaluator's Python from",
    "exec_failed": "a command ageval runs in a container failed to run",
    "executor_unavailable": "no executor is registered for a node kind (broken install)",
    "harbor_not_installed": "Harbor is not installed",
    "image_missing": "a built image is gone from the Docker engine",
    "image_unavailable": "an image is not present and cannot be pulled",
    "internal_error": "a bug in ageval",
    "interrupted": "the run was interrupted",
    "invalid_rule": "a rules/ file of the installation is invalid",
    "job_limit_reached": "the job's --max-cost or --max-tokens stopped the attempt",
    "job_record_invalid": "a shared job record in the cache is malformed",
    "missing_parent": "a node's parent result is missing",
    "mock_port_unavailable": "the mock model cannot listen on its port",
    "model_stream_broken": "the model upstream broke or stalled a streamed response",
    "model_upstream_unavailable": "the model upstream kept failing past the stall budget",
    "node_failed": "a node failed with an unexpected exception",
    "node_outputs_mismatch": "an executor stored other outputs than its rule declares",
    "not_computed": "the attempt was not computed (the run stopped before it)",
    "python_image_unavailable": "the python image an evaluator needs cannot be pulled",
    "remote_access_denied": "the remote refused access",
    "remote_backend_missing": "the remote needs a package that is not installed",
    "remote_entry_bad_signature": "a remote entry's signature does not verify",
    "remote_entry_conflict": "the remote holds an unusable entry for the node",
    "remote_entry_malformed": "a remote entry is malformed",
    "remote_entry_unsigned": "a remote entry is unsigned while a signing key is set",
    "remote_unavailable": "the remote failed",
    "remote_version_mismatch": "the remote has another layout",
    "remote_write_failed": "an upload to the remote failed",
    "report_write_failed": "the report cannot be written",
    "resume_attempt_running": "another process is still running the attempt",
    "rules_missing": "the rules/ directory is not installed",
    "run_image_missing": "the attempt's image is gone, so its files cannot be scored",
    "sandbox_copy_failed": "copying the agent or its files into the container failed",
    "scoring_environment_lost": "the scoring container vanished while the verifier ran",
    "scoring_host_unavailable": "a scoring host could not be started",
    "unpause_failed": "the engine left a container frozen after a copy or commit froze it",
    "verifier_sandbox_failed": "the sandbox failed while verifying, every try",
    "view_port_unavailable": "the viewer cannot listen on its port",
}


def _catalogue(*groups: tuple[FailureClass, Mapping[str, str]]) -> Mapping[str, Failure]:
    entries: dict[str, Failure] = {}
    for failure_class, meanings in groups:
        for code, meaning in meanings.items():
            if code in entries:
                raise ValueError(f"{code} is in two failure classes")
            entries[code] = Failure(code, failure_class, meaning)
    return MappingProxyType(dict(sorted(entries.items())))


CATALOGUE: Mapping[str, Failure] = _catalogue(
    ("agent", _AGENT), ("task", _TASK), ("infrastructure", _INFRASTRUCTURE)
)
"""Code -> its failure: every code ageval raises, in code order."""


def failure_class(code: str) -> FailureClass:
    """The class of `code`; an unknown code is `agent` (it counts)."""
    found = CATALOGUE.get(code)
    return found.failure_class if found is not None else UNKNOWN_CLASS


def is_infrastructure(code: str) -> bool:
    """Whether `code` is not the agent's fault: retried, and left out of scores."""
    return failure_class(code) == "infrastructure"


SPEND_LIMIT = "job_limit_reached"
"""The infrastructure code of attempts the job's spend limit stopped: shown on its own line."""
ENGINE_UNAVAILABLE = "engine_unavailable"
"""The Docker engine did not answer a call in time: the job starts nothing more on it."""


def infrastructure_lines(codes: Iterable[str], *, counted: bool = False) -> list[str]:
    """The loud lines about the infrastructure failures among the ERROR codes `codes`:
    `3 infrastructure failures, not scored (environment_lost×2, disk_full×1);
    --count-infra-as-fail counts them`, and apart, the attempts the spend limit stopped.
    `counted`: the scores counted them as not passed (`--count-infra-as-fail`)."""
    found = Counter(code for code in codes if is_infrastructure(code))
    stopped = found.pop(SPEND_LIMIT, 0)
    lines = []
    if found:
        total = sum(found.values())
        listed = ", ".join(f"{code}×{count}" for code, count in sorted(found.items()))
        noun = "failure" if total == 1 else "failures"
        if counted:
            lines.append(
                f"{total} infrastructure {noun}, counted as not passed "
                f"(--count-infra-as-fail): {listed}"
            )
        else:
            lines.append(
                f"{total} infrastructure {noun}, not scored ({listed}); "
                "--count-infra-as-fail counts them"
            )
    if stopped:
        noun = "attempt" if stopped == 1 else "attempts"
        how = "counted as not passed" if counted else "not scored"
        lines.append(f"{stopped} {noun} stopped by the job's spend limit, {how}")
    return lines


def markdown_table() -> str:
    """The catalogue as the Markdown table docs/failures.md shows."""
    lines = ["| code | class | meaning |", "| --- | --- | --- |"]
    lines += [
        f"| `{failure.code}` | {failure.failure_class} | {failure.meaning} |"
        for failure in CATALOGUE.values()
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
