"""Harbor verifier classes for ageval's `verifier.import_path` tests.

`AnswerVerifier` does what Harbor's own `Verifier` does with tests/test.sh, through every
method of the environment it is given, and adds a reward key of its own.
"""

from __future__ import annotations

import json
from typing import Any

from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier
from harbor.verifier.verifier import Verifier


class AnswerVerifier(BaseVerifier):
    """Runs tests/test.sh in the sandbox, downloads /logs/verifier and reads reward.txt,
    then adds `key`: whether /tmp/answer.txt holds `expected` (from verifier.kwargs)."""

    def __init__(self, *, expected: str, key: str = "answer_matches", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.expected = expected
        self.key = key

    async def verify(self) -> VerifierResult:
        environment, paths = self.environment, self.trial_paths
        await environment.upload_dir(source_dir=self.task.paths.tests_dir, target_dir="/tests")
        await environment.exec("chmod +x /tests/test.sh", user="root")
        await environment.exec(
            "/tests/test.sh > /logs/verifier/test-stdout.txt 2>&1", env=self.override_env
        )
        note = paths.trial_dir / "note.txt"
        note.write_text("uploaded by the verifier\n")
        await environment.upload_file(source_path=note, target_path="/logs/verifier/note.txt")
        probe = await environment.exec(
            'printf "%s|%s|%s|%s" "$(id -un)" "$PWD" "$PLUGIN_CHECK" "$(cat /tmp/answer.txt)"',
            env=self.override_env,
        )
        await environment.download_dir(source_dir="/logs/verifier", target_dir=paths.verifier_dir)
        await environment.download_file(
            source_path="/tmp/answer.txt", target_path=paths.trial_dir / "answer.txt"
        )
        user, cwd, check, answer = (probe.stdout or "").split("|")
        facts = {"user": user, "cwd": cwd, "check": check, "exit": probe.return_code}
        (paths.trial_dir / "probe.json").write_text(json.dumps(facts))
        reward = float(paths.reward_text_path.read_text())
        return VerifierResult(rewards={"reward": reward, self.key: float(answer == self.expected)})


class HarborDefault(Verifier):
    """Harbor's own tests/test.sh verifier, unchanged, run through ageval's environment."""


class Broken(BaseVerifier):
    """A verifier that fails on the host (e.g. an unreachable LLM judge)."""

    async def verify(self) -> VerifierResult:
        raise RuntimeError("the judge is unreachable")


class NotFinite(BaseVerifier):
    """Returns a reward that is not a finite number."""

    async def verify(self) -> VerifierResult:
        return VerifierResult(rewards={"reward": float("nan")})


class Overflowing(BaseVerifier):
    """Returns an integer reward no float can hold."""

    async def verify(self) -> VerifierResult:
        return VerifierResult(rewards={"reward": 10**400})


class Slow(BaseVerifier):
    """A command that outlasts the verifier timeout."""

    async def verify(self) -> VerifierResult:
        await self.environment.exec("sleep 60")
        return VerifierResult(rewards={"reward": 1.0})


class NotAVerifier:
    """Not derived from Harbor's BaseVerifier."""
