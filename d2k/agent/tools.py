"""The agent's tools: their OpenAI function schemas and their implementation.

``list_files``, ``read_file(path)``, ``write_file(path, content)``, ``run_correctness(path,
workloads)``, ``run_benchmark(path)``, ``submit(path)``. Evaluation goes through the execution
backend (one isolated process per call). Every failure is returned to the agent as a tool error;
nothing the agent sends can raise out of here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from d2k.agent.workspace import Workspace, WorkspaceError

DESIGN_FILE = "DESIGN.md"
MAX_RESULT_CHARS = 12_000


def _fn(name, description, properties=None, required=None):
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties or {}, "required": required or [],
                       "additionalProperties": False}}}


SCHEMAS = [
    _fn("list_files", "List the files in your workspace."),
    _fn("read_file", "Read a text file of your workspace.", {"path": {"type": "string"}}, ["path"]),
    _fn("write_file", "Create or overwrite a text file in your workspace. Write DESIGN.md first.",
        {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
    _fn("run_correctness", "Check a solution file against the reference on the smoke or bench workloads.",
        {"path": {"type": "string"}, "workloads": {"type": "string", "enum": ["smoke", "bench"]}}, ["path"]),
    _fn("run_benchmark", "Check and time a solution file on the bench workloads; reports speedup over the reference.",
        {"path": {"type": "string"}}, ["path"]),
    _fn("submit", "Submit a solution file as your final answer. This ends the attempt.",
        {"path": {"type": "string"}}, ["path"]),
]
NAMES = [s["function"]["name"] for s in SCHEMAS]


class ToolError(Exception):
    pass


def _error(message: str) -> str:
    """The tool message of a refused call: one line (the agent reads it; a log shows it)."""
    return json.dumps({"error": " ".join(str(message).split())})


def _kind(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def check_arguments(name: str, args: dict) -> None:
    """The arguments against the tool's JSON schema: every refusal names the tool and the argument."""
    params = next(s for s in SCHEMAS if s["function"]["name"] == name)["function"]["parameters"]
    unknown = sorted(set(args) - set(params["properties"]))
    if unknown:
        shown = ", ".join(repr(u[:40]) for u in unknown[:5])
        raise ToolError(f"unknown argument(s) {shown} for {name}; it takes {', '.join(params['properties']) or 'none'}")
    for required in params["required"]:
        if required not in args:
            raise ToolError(f"{name}: argument {required!r} is missing")
    for arg, value in args.items():
        prop = params["properties"][arg]
        if prop.get("type") == "string" and not isinstance(value, str):
            raise ToolError(f"{name}: argument {arg!r} must be a string, not {_kind(value)}")
        if "enum" in prop and value not in prop["enum"]:
            raise ToolError(f"{name}: argument {arg!r} must be one of {', '.join(prop['enum'])}, not {str(value)[:40]!r}")


@dataclass
class ToolState:
    written: list[str] = field(default_factory=list)      # solution paths in write order
    correct: list[str] = field(default_factory=list)      # paths that passed run_correctness / run_benchmark
    submitted: str | None = None


class Tools:
    def __init__(self, workspace: Workspace, evaluator):
        """``evaluator`` has ``check(path, tag) -> dict`` and ``benchmark(path) -> dict``."""
        self.ws = workspace
        self.evaluator = evaluator
        self.state = ToolState()

    def call(self, name: str, raw_arguments: str | None) -> tuple[bool, str]:
        """(ok, result text for the tool message)."""
        try:
            if name not in NAMES:
                raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(NAMES)}")
            try:
                args = json.loads(raw_arguments or "{}")
            except json.JSONDecodeError as exc:
                raise ToolError(f"{name}: the arguments are not valid JSON ({exc.msg} at position {exc.pos})") from None
            except RecursionError:
                raise ToolError(f"{name}: the arguments are not valid JSON (nested too deeply)") from None
            if not isinstance(args, dict):
                raise ToolError(f"{name}: the arguments must be a JSON object, not {_kind(args)}")
            check_arguments(name, args)
            result = getattr(self, f"_{name}")(**args)
            text = result if isinstance(result, str) else json.dumps(result, indent=1, default=str)
            if len(text) > MAX_RESULT_CHARS:
                text = text[:MAX_RESULT_CHARS] + f"\n... ({len(text) - MAX_RESULT_CHARS} more characters cut)"
            return True, text
        except TypeError as exc:
            return False, _error(f"bad arguments for {name}: {exc}")
        except (ToolError, WorkspaceError) as exc:
            message = str(exc)
            return False, _error(message if message.startswith(f"{name}: ") or name not in NAMES else f"{name}: {message}")
        except OSError as exc:  # a path the file system refuses (too long, a directory, ...)
            return False, _error(f"{name}: argument 'path': {exc.strerror or type(exc).__name__}")
        except UnicodeError as exc:
            arg = "content" if name == "write_file" else "path"
            return False, _error(f"{name}: argument {arg!r}: not valid Unicode text ({type(exc).__name__})")
        except Exception as exc:  # the harness's own failure must not end the attempt
            return False, _error(f"{name}: {type(exc).__name__}: {str(exc)[:500]}")

    # -- the tools ------------------------------------------------------------------------------
    def _list_files(self):
        return {"files": self.ws.list_files()}

    def _read_file(self, path):
        return self.ws.read_file(path)

    def _write_file(self, path, content):
        target = self.ws.resolve(path)
        is_design = target == self.ws.resolve(DESIGN_FILE)
        if not is_design and not self.ws.resolve(DESIGN_FILE).is_file():
            raise ToolError("write your design to DESIGN.md before any other file")
        n = self.ws.write_file(path, content)
        if target.suffix == ".py":
            rel = str(target.relative_to(self.ws.root))
            self.state.written.append(rel)
        return {"written": path, "bytes": n}

    def _solution(self, path):
        target = self.ws.resolve(path)
        if not target.is_file():
            raise ToolError(f"no such file: {path}")
        if target.suffix != ".py":
            raise ToolError("a solution is a .py file defining run(...)")
        return target

    def _run_correctness(self, path, workloads="smoke"):
        if workloads not in ("smoke", "bench"):
            raise ToolError("workloads must be 'smoke' or 'bench'")
        result = self.evaluator.check(self._solution(path), workloads)
        if result.get("all_passed"):
            self.state.correct.append(str(self.ws.resolve(path).relative_to(self.ws.root)))
        return result

    def _run_benchmark(self, path):
        result = self.evaluator.benchmark(self._solution(path))
        if result.get("all_passed"):
            self.state.correct.append(str(self.ws.resolve(path).relative_to(self.ws.root)))
        return result

    def _submit(self, path):
        target = self._solution(path)
        self.state.submitted = str(target.relative_to(self.ws.root))
        return {"submitted": self.state.submitted}

    def final_choice(self) -> tuple[str | None, str]:
        """The submission; on budget exhaustion the last correct candidate, else the last written."""
        if self.state.submitted:
            return self.state.submitted, "submitted"
        for label, paths in (("last correct candidate", self.state.correct), ("last written file", self.state.written)):
            for path in reversed(paths):
                if (self.ws.root / path).is_file():
                    return path, label
        return None, "nothing written"
