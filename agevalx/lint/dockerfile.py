"""Dockerfile instructions with their line numbers, continuations joined (no build)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Instruction:
    keyword: str
    """Upper case: FROM, COPY, RUN, ..."""
    argument: str
    line: int
    """The line the instruction starts on."""

    def words(self) -> list[str]:
        try:
            return shlex.split(self.argument, comments=False)
        except ValueError:
            return self.argument.split()


def instructions(text: str) -> list[Instruction]:
    found: list[Instruction] = []
    pending = ""
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, argument = (pending + stripped).strip().partition(" ")
        pending = ""
        found.append(Instruction(keyword.upper(), argument.strip(), start))
    return found


def base_images(text: str) -> list[tuple[str, int]]:
    """Each FROM's image reference and line; stages named earlier (`FROM build`) and
    `scratch` are left out."""
    stages: set[str] = set()
    images: list[tuple[str, int]] = []
    for instruction in instructions(text):
        if instruction.keyword != "FROM":
            continue
        words = [word for word in instruction.words() if not word.startswith("--")]
        if not words:
            continue
        image = words[0]
        if len(words) >= 3 and words[1].lower() == "as":
            stages.add(words[2].lower())
        if image.lower() not in stages and image != "scratch":
            images.append((image, instruction.line))
    return images


def copied_sources(instruction: Instruction) -> list[str]:
    """The sources of a COPY or ADD (every word but flags and the destination)."""
    argument = instruction.argument.strip()
    if argument.startswith("["):
        try:
            words = [str(word) for word in json.loads(argument)]
        except ValueError:
            words = []
    else:
        words = instruction.words()
    words = [word for word in words if not word.startswith("--")]
    return words[:-1]
