"""The signal vocabulary: declarative static evidence for a design item, evaluated on facts.

A rubric item lists ``signals`` (all must hold for *implemented*) and optionally ``partial``
(any holding gives *partial* when the signals do not all hold). Each signal is a table with a
``kind``; every kind, its fields and its meaning:

| kind | fields | holds when |
|---|---|---|
| `call` | `name`, `in_loop`?, `keyword`?, `arg_contains`?, `pointer`?, `scope`? (kernel/host/any), `min_count`? | a call to `name` (exact dotted name, or its last parts: `rsqrt` matches `tl.math.rsqrt`) exists, optionally inside a loop, with a keyword, with an argument containing a text, with a first argument derived from a kernel parameter matching the `pointer` regex (through simple assignments), at least `min_count` times |
| `keyword` | `name`, `value`?, `where`? (config/launch/call/any) | a keyword argument `name` (e.g. `num_warps`, `num_stages`, `warp_specialize`) is given in a `triton.Config`, a kernel launch or a call, optionally with a value |
| `autotune` | `key_contains`? (list), `min_configs`? | a kernel is decorated with `triton.autotune`, its `key=` names those, it lists enough configs |
| `constexpr` | `pattern` (regex) | a kernel has a `tl.constexpr` parameter whose name matches |
| `pattern` | `regex`, `scope`? (kernel/file) | the regular expression matches a kernel's code (or the whole file's), comments and strings excluded |
| `constant` | `value`, `rel_tol`?, `scope`? (kernel/host/any) | a numeric literal equal to `value` (e.g. 1.44269504) appears in a kernel (or host code) |
| `kernels` | `min`?, `max`? | the number of entry kernels (device helpers excluded) is within bounds |
| `loop` | `contains_call`?, `header_contains`? | a loop in a kernel contains a call to that name / has that text in its header |
| `store_to_input` | `param`? | a kernel stores through a pointer parameter it also loads from (in-place) |
| `program_id` | `axis` | `tl.program_id(axis)` is read |
| `cuda` | `feature` (shared, syncthreads, shuffle, pragma_unroll, launch_bounds, atomic, vector_type) | a CUDA kernel uses it |
| `all` / `any` | `of` (list of signals) | every / at least one of them holds |
| `not` | `signal` | the signal does not hold (evidence: none) |

Evidence is a list of (kernel, line, snippet). Only `pattern`, `not` and combinations made only of
them are *weak* evidence; every other kind reads structured facts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# the `regex` module (a dependency of dspy) for pattern signals: the same syntax as `re`, plus a
# timeout, so a backtracking pattern cannot hang the judge on an unusual file
import regex as regex_module

from d2k.judge.facts import Call, Kernel, SolutionFacts, pointer_base

KINDS = {
    "call": ({"name"}, {"in_loop", "keyword", "arg_contains", "pointer", "scope", "min_count"}),
    "keyword": ({"name"}, {"value", "where"}),
    "autotune": (set(), {"key_contains", "min_configs"}),
    "constexpr": ({"pattern"}, set()),
    "pattern": ({"regex"}, {"scope"}),
    "constant": ({"value"}, {"rel_tol", "scope"}),
    "kernels": (set(), {"min", "max"}),
    "loop": (set(), {"contains_call", "header_contains"}),
    "store_to_input": (set(), {"param"}),
    "program_id": ({"axis"}, set()),
    "cuda": ({"feature"}, set()),
    "all": ({"of"}, set()),
    "any": ({"of"}, set()),
    "not": ({"signal"}, set()),
}
COMMON = {"kind", "note"}
# fields the evaluation reads as text, numbers or lists: anything else is a problem here, not a crash there
FIELD_TYPES = [
    *[(f, (str,), "text") for f in ("name", "regex", "pattern", "scope", "where", "arg_contains", "keyword", "pointer",
                                   "contains_call", "header_contains", "param", "feature", "note")],
    *[(f, (int,), "an integer") for f in ("min", "max", "min_count", "min_configs")],
    ("axis", (int, str), "an integer"),
    ("rel_tol", (int, float), "a number"),
    ("key_contains", (list,), "a list of text"),
    ("in_loop", (bool,), "true or false"),
]
CUDA_FEATURE_NAMES = {"shared", "syncthreads", "shuffle", "pragma_unroll", "launch_bounds", "atomic", "vector_type"}


def check(signal, where: str = "") -> list[str]:
    """Problems with one signal table (empty when it is well formed)."""
    if not isinstance(signal, dict):
        return [f"{where}: a signal must be a table"]
    kind = signal.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        return [f"{where}: unknown signal kind {kind!r} (known: {', '.join(sorted(KINDS))})"]
    required, optional = KINDS[kind]
    problems = [f"{where}: {kind} signal needs `{f}`" for f in sorted(required - set(signal))]
    extra = set(signal) - required - optional - COMMON
    problems += [f"{where}: {kind} signal has unknown field `{f}`" for f in sorted(extra)]
    for f, types, wanted in FIELD_TYPES:
        if f in signal and (not isinstance(signal[f], types) or isinstance(signal[f], bool) and bool not in types):
            problems.append(f"{where}: {kind} signal field `{f}` must be {wanted}")
    if isinstance(signal.get("key_contains"), list) and not all(isinstance(k, str) for k in signal["key_contains"]):
        problems.append(f"{where}: {kind} signal field `key_contains` must be a list of text")
    if isinstance(signal.get("pointer"), str):
        try:
            re.compile(signal["pointer"])
        except re.error as exc:
            problems.append(f"{where}: invalid regex in `pointer`: {exc}")
    if problems:
        return problems
    if kind in ("all", "any"):
        if not isinstance(signal.get("of"), list) or not signal["of"]:
            problems.append(f"{where}: `of` must be a non-empty list of signals")
        else:
            for i, sub in enumerate(signal["of"]):
                problems += check(sub, f"{where}.of.{i}")
    if kind == "not":
        problems += check(signal.get("signal"), f"{where}.signal")
    if kind in ("pattern", "constexpr"):
        try:
            regex_module.compile(signal.get("regex") or signal.get("pattern") or "")
        except regex_module.error as exc:
            problems.append(f"{where}: invalid regex: {exc}")
    if kind == "cuda" and signal.get("feature") not in CUDA_FEATURE_NAMES:
        problems.append(f"{where}: cuda feature must be one of {', '.join(sorted(CUDA_FEATURE_NAMES))}")
    return problems


@dataclass
class Evidence:
    kernel: str
    line: int
    snippet: str

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "line": self.line, "snippet": self.snippet}


PATTERN_TIMEOUT_S = 1.0   # per search (a file or a kernel); far above what a sane pattern needs (< 0.05 s)


class SignalTimeout(Exception):
    """A pattern signal's regex ran past PATTERN_TIMEOUT_S on this file (catastrophic backtracking)."""


def _finditer(pattern: str, text: str):
    """regex.finditer under the time limit; a generator, so a caller that stops early stops the search."""
    try:
        yield from regex_module.finditer(pattern, text, regex_module.MULTILINE, timeout=PATTERN_TIMEOUT_S)
    except TimeoutError:
        raise SignalTimeout(f"pattern {pattern[:80]!r} took over {PATTERN_TIMEOUT_S:g} s") from None


@dataclass
class Result:
    holds: bool
    evidence: list[Evidence]
    weak: bool = False


def _name_matches(pattern: str, name: str) -> bool:
    base = name.split("[", 1)[0]
    return base == pattern or base.endswith("." + pattern)


def _scopes(facts: SolutionFacts, scope: str) -> list[Kernel]:
    if scope == "host":
        return [facts.host] if facts.host else []
    if scope == "any":
        return facts.all_scopes
    return facts.kernels


def _line_snippet(kernel: Kernel, line: int, fallback: str = "") -> str:
    if kernel.source and kernel.language != "host":
        lines = kernel.source.splitlines()
        idx = line - kernel.source_line
        if 0 <= idx < len(lines):
            return lines[idx].strip()[:160]
    return fallback[:160]


def evaluate(signal: dict, facts: SolutionFacts) -> Result:
    kind = signal["kind"]
    ev: list[Evidence] = []
    if kind == "call":
        want = signal["name"]
        for k in _scopes(facts, signal.get("scope", "kernel")):
            for c in k.calls:
                if not _name_matches(want, c.name):
                    continue
                if "in_loop" in signal and (c.loop_depth > 0) != bool(signal["in_loop"]):
                    continue
                if "keyword" in signal and signal["keyword"] not in c.keywords:
                    continue
                if "arg_contains" in signal and not any(signal["arg_contains"] in a for a in [*c.args, *c.keywords.values()]):
                    continue
                if "pointer" in signal and not (c.args and re.search(signal["pointer"], pointer_base(k, c.args[0]))):
                    continue
                ev.append(Evidence(k.name, c.line, c.text))
        return Result(len(ev) >= int(signal.get("min_count", 1)), ev)
    if kind == "keyword":
        name, where = signal["name"], signal.get("where", "any")
        value = signal.get("value")
        sources: list[tuple[str, Call]] = []
        for k in facts.all_scopes:
            for c in [*k.decorators, *k.calls]:
                is_config = c.name.endswith("Config")
                is_launch = "[" in c.name
                if where == "config" and not is_config:
                    continue
                if where == "launch" and not is_launch:
                    continue
                if where == "call" and (is_config or is_launch):
                    continue
                sources.append((k.name, c))
            for c in facts.launches if where in ("launch", "any") else []:
                sources.append(("<host>", c))
        seen = set()
        for kname, c in sources:
            text = c.keywords.get(name)
            if text is None and c.name.endswith("Config") and c.args:
                # triton.Config({"BLOCK_M": 128, ...}, num_warps=8): meta-parameters in the dict
                m = re.search(rf"['\"]{re.escape(name)}['\"]\s*:\s*([^,}}]+)", c.args[0])
                text = m.group(1).strip() if m else None
            if text is None or (value is not None and text.strip() != str(value)):
                continue
            key = (c.line, c.text)
            if key not in seen:
                seen.add(key)
                ev.append(Evidence(kname, c.line, c.text))
        return Result(bool(ev), ev)
    if kind == "autotune":
        file_configs = sum(1 for c in (facts.host.calls if facts.host else []) if c.name.endswith("Config"))
        # @triton.autotune(...) decorators, and triton.autotune(...)(kernel) applied in host code
        sites = [(k.name, d) for k in facts.kernels for d in k.decorators]
        sites += [("<host>", c) for c in (facts.host.calls if facts.host else [])]
        for kname, d in sites:
            if not _name_matches("autotune", d.name):
                continue
            key = d.keywords.get("key", "")
            if any(f"'{w}'" not in key and f'"{w}"' not in key for w in signal.get("key_contains", [])):
                continue
            configs = d.keywords.get("configs", d.args[0] if d.args else "")
            # configs built elsewhere (a helper, a comprehension): count the file's Config calls
            n_configs = configs.count("Config(") or file_configs
            if n_configs < int(signal.get("min_configs", 1)):
                continue
            ev.append(Evidence(kname, d.line, d.text))
        return Result(bool(ev), ev)
    if kind == "constexpr":
        pattern = regex_module.compile(signal["pattern"])  # the module `check` validated it with
        for k in facts.kernels:
            for p in k.constexprs:
                if pattern.search(p):
                    ev.append(Evidence(k.name, k.line, f"{p}: tl.constexpr"))
        return Result(bool(ev), ev)
    if kind == "pattern":
        if signal.get("scope", "kernel") == "file":
            for m in _finditer(signal["regex"], facts.code):  # comments and strings are not evidence
                line = facts.code.count("\n", 0, m.start()) + 1
                ev.append(Evidence("<file>", line, facts.text.splitlines()[line - 1].strip()[:160]))
                if len(ev) >= 5:
                    break
        else:
            for k in facts.kernels:
                for m in _finditer(signal["regex"], k.code or k.source):
                    line = _source_line(k, m.start())
                    ev.append(Evidence(k.name, line, _line_snippet(k, line, m.group(0))))
                    if len(ev) >= 5:
                        break
        return Result(bool(ev), ev, weak=True)
    if kind == "constant":
        value, tol = float(signal["value"]), float(signal.get("rel_tol", 1e-6))
        for k in _scopes(facts, signal.get("scope", "kernel")):
            for number, line in k.numbers:
                if math.isclose(number, value, rel_tol=tol):
                    ev.append(Evidence(k.name, line, _line_snippet(k, line, str(number))))
        return Result(bool(ev), ev)
    if kind == "kernels":
        entries = facts.entry_kernels
        n = len(entries)
        ok = n >= int(signal.get("min", 0)) and ("max" not in signal or n <= int(signal["max"]))
        return Result(ok, [Evidence(k.name, k.line, f"kernel {k.name}") for k in entries] if ok else [])
    if kind == "loop":
        for k in facts.kernels:
            for loop in k.loops:
                if "contains_call" in signal and not any(_name_matches(signal["contains_call"], c) for c in loop.calls):
                    continue
                if "header_contains" in signal and signal["header_contains"] not in loop.header:
                    continue
                ev.append(Evidence(k.name, loop.line, loop.header))
        return Result(bool(ev), ev)
    if kind == "store_to_input":
        for k in facts.kernels:
            loaded = {pointer_base(k, c.args[0]) for c in k.calls if _name_matches("load", c.name) and c.args}
            for c in k.calls:
                if _name_matches("store", c.name) and c.args:
                    base = pointer_base(k, c.args[0])
                    if base in loaded and base in k.params and signal.get("param", base) == base:
                        ev.append(Evidence(k.name, c.line, c.text))
        return Result(bool(ev), ev)
    if kind == "program_id":
        axis = str(signal["axis"])
        for k in facts.kernels:
            for c in k.calls:
                if _name_matches("program_id", c.name) and (c.args[:1] == [axis] or c.keywords.get("axis") == axis):
                    ev.append(Evidence(k.name, c.line, c.text))
        return Result(bool(ev), ev)
    if kind == "cuda":
        feature = signal["feature"]
        for k in facts.kernels:
            for line in k.cuda.get(feature, []):
                ev.append(Evidence(k.name, line, _line_snippet(k, line, feature)))
        return Result(bool(ev), ev)
    if kind in ("all", "any"):
        results = [evaluate(s, facts) for s in signal["of"]]
        holds = all(r.holds for r in results) if kind == "all" else any(r.holds for r in results)
        evidence = [e for r in results if r.holds for e in r.evidence]
        weak = all(r.weak for r in results if r.holds) if evidence else all(r.weak for r in results)
        return Result(holds, evidence if holds else [], weak)
    if kind == "not":
        inner = evaluate(signal["signal"], facts)
        return Result(not inner.holds, [], weak=True)
    raise ValueError(f"unknown signal kind {kind!r}")


def _source_line(kernel: Kernel, offset: int) -> int:
    """The file line of a character offset into ``kernel.source`` (or its blanked ``code``)."""
    return kernel.source_line + kernel.source.count("\n", 0, offset)
