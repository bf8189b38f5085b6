"""Finds every failure code the package's source raises, by reading its syntax trees.

A code is a snake_case string constant in one of these places:
- the argument a call passes for the `code` parameter of a function or class of the package
  (`coded("x", ...)`, `_outcome(status, "x", ...)`, `AgentError("x", ...)`);
- the first argument, or the `code=` keyword, of a call of a class or function whose name
  ends in Error, Failure, Failed, Divergence, Outcome or ErrorInfo (`AgevalError("x", ...)`,
  `EnvironmentFailure(...)`, `ErrorInfo(code=...)`, `_Failed(...)`), builtin exceptions aside
  (their first argument is a message);
- the `code=` keyword of any other call, and an assignment to a name or attribute `code`;
- a field `code: Literal["x", "y"]`;
- an UPPER_CASE module constant of two words or more (`UNAVAILABLE =
  "model_upstream_unavailable"`, also imported from another module) passed to any call:
  helpers such as `_outcome(status, CODE, ...)`.

Calls whose name says warning are left out: a warning's code is not a failure. A branch of
`a if c else b` counts both ways.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

CODE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
"""What a code looks like (a message has spaces or capitals)."""
UPPER = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
CODED_CALLEES = ("error", "failure", "failed", "divergence", "outcome", "errorinfo")


def sources_of(root: Path, package: str = "agevalx") -> dict[str, str]:
    """Module name -> source of every module of `package` under `root`."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path.read_text(encoding="utf-8")
    return found


def raised_codes(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Code -> the modules that raise (or record) it."""
    trees = {module: ast.parse(text) for module, text in sources.items()}
    constants = {module: _constants(tree) for module, tree in trees.items()}
    takers: dict[str, int] = {}
    for tree in trees.values():
        takers.update(_code_takers(tree))
    found: dict[str, set[str]] = {}
    for module, tree in trees.items():
        for code in _Module(tree, constants[module], constants, takers).codes():
            if CODE.match(code):
                found.setdefault(code, set()).add(module)
    return found


def _constants(tree: ast.Module) -> dict[str, str]:
    """A module's UPPER_CASE = "text" constants."""
    found = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if (
            isinstance(target, ast.Name)
            and UPPER.match(target.id)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            found[target.id] = value.value
    return found


def _code_takers(tree: ast.Module) -> dict[str, int]:
    """Function (or class, by its `__init__`) name -> the position of its `code` parameter."""
    found = {}
    for node in ast.walk(tree):
        functions = [node] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            functions = [
                item
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name == "__init__"
            ]
        for function in functions:
            names = [argument.arg for argument in function.args.args]
            if names and names[0] in ("self", "cls"):
                names = names[1:]
            if "code" in names:
                name = node.name if isinstance(node, ast.ClassDef) else function.name
                found[name] = names.index("code")
    return found


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


class _Module:
    def __init__(
        self,
        tree: ast.Module,
        own: dict[str, str],
        everyone: Mapping[str, dict[str, str]],
        takers: Mapping[str, int],
    ) -> None:
        self.tree = tree
        self.takers = takers
        self.names = dict(own)
        self.modules: dict[str, dict[str, str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    local = alias.asname or alias.name
                    if alias.name in everyone.get(node.module, {}):
                        self.names[local] = everyone[node.module][alias.name]
                    elif f"{node.module}.{alias.name}" in everyone:
                        self.modules[local] = everyone[f"{node.module}.{alias.name}"]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in everyone:
                        self.modules[alias.asname or alias.name] = everyone[alias.name]

    def literal(self, expr: ast.expr) -> list[str]:
        """The strings `expr` can be: a constant, both branches of an `if` expression."""
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return [expr.value]
        if isinstance(expr, ast.IfExp):
            return self.literal(expr.body) + self.literal(expr.orelse)
        return self.constant(expr)

    def constant(self, expr: ast.expr) -> list[str]:
        """The value of an UPPER_CASE constant `expr` names (`CODE`, `errors.CODE`)."""
        if isinstance(expr, ast.Name) and expr.id in self.names:
            return [self.names[expr.id]]
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.attr in self.modules.get(expr.value.id, {})
        ):
            return [self.modules[expr.value.id][expr.attr]]
        return []

    def codes(self) -> Iterator[str]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                yield from self._call(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_callee(target) == "code" for target in targets):
                    yield from self.literal(node.value)
            if (
                isinstance(node, ast.AnnAssign)
                and _callee(node.target) == "code"
                and "Literal" in ast.unparse(node.annotation)
            ):
                yield from (
                    sub.value
                    for sub in ast.walk(node.annotation)
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
                )
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "code":
                        yield from self.literal(value)

    def _call(self, node: ast.Call) -> Iterator[str]:
        name = _callee(node.func)
        if "warn" in name.lower() or hasattr(builtins, name):
            return
        for keyword in node.keywords:
            if keyword.arg == "code":
                yield from self.literal(keyword.value)
        position = self.takers.get(name, 0 if name.lower().endswith(CODED_CALLEES) else None)
        if position is not None and len(node.args) > position:
            yield from self.literal(node.args[position])
        for argument in node.args:  # a one-word constant is a name, a path...: not a code
            yield from (value for value in self.constant(argument) if "_" in value)
