"""The signal vocabulary: declarative static evidence for a design item, evaluated on facts.

A rubric item lists ``signals`` (all must hold for *implemented*) and optionally ``partial``
(any holding gives *partial* when the signals do not all hold). Each signal is a table with a
``kind``. Every kind is one function below, registered with ``@signal_kind``: its fields, its
checks, when it holds (the function's docstring) and how it is evaluated. ``kinds_markdown()``
renders them as the table of docs/judges.md (``python -m d2k.judge.signals --docs`` rewrites it).

Evidence is a list of (kernel, line, snippet). Only `pattern`, `not` and combinations made only of
them are *weak* evidence; every other kind reads structured facts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# the `regex` module (a dependency of dspy) for pattern signals: the same syntax as `re`, plus a
# timeout, so a backtracking pattern cannot hang the judge on an unusual file
import regex as regex_module

from d2k import ast_parse
from d2k.judge.facts import CUDA_FEATURES, Call, Kernel, Loop, SolutionFacts, pointer_base

COMMON = {"kind", "note"}
# fields the evaluation reads as text, numbers or lists: anything else is a problem here, not a crash there
FIELD_TYPES = [
    *[(f, (str,), "text") for f in ("name", "regex", "pattern", "scope", "where", "arg_contains", "keyword", "pointer",
                                   "contains_call", "header_contains", "param", "feature", "note", "at", "depends_on",
                                   "arg_value", "bound_from", "pointer_depends")],
    *[(f, (int,), "an integer") for f in ("min_count", "min_configs", "arg_index")],
    *[(f, (int, float), "a number") for f in ("min", "max")],
    *[(f, (bool,), "true or false") for f in ("varies", "across", "grid_stride")],
    ("axis", (int, str), "an integer"),
    ("rel_tol", (int, float), "a number"),
    ("key_contains", (list,), "a list of text"),
    ("in_loop", (bool,), "true or false"),
]


@dataclass(frozen=True)
class Kind:
    """A signal kind. ``fields``: ``"name"`` (required) or ``"name?"`` (optional), then an optional
    note for the docs; ``run`` evaluates a signal in a context, and its docstring says when the
    signal holds; ``check`` adds the kind's own problems once the fields are well formed."""
    names: tuple[str, ...]
    fields: tuple[str, ...]
    run: Callable
    check: Callable | None = None

    @property
    def required(self) -> set[str]:
        return {name for name, optional, _ in map(_field, self.fields) if not optional}

    @property
    def allowed(self) -> set[str]:
        return {name for name, _, _ in map(_field, self.fields)}


KINDS: dict[str, Kind] = {}   # every name of every kind, in the order registered (the docs' order)


def signal_kind(*names: str, fields: tuple[str, ...] = (), check: Callable | None = None):
    """Register the decorated ``run(signal, facts, ctx) -> Result`` as the signal kind(s) ``names``."""
    def register(run: Callable) -> Callable:
        kind = Kind(names, fields, run, check)
        KINDS.update(dict.fromkeys(names, kind))
        return run
    return register


def _field(spec: str) -> tuple[str, bool, str]:
    """A field spec such as ``"scope? (kernel/host/any)"`` as (name, optional, note)."""
    head, _, note = spec.partition(" ")
    return head.rstrip("?"), head.endswith("?"), note


def check(signal, where: str = "") -> list[str]:
    """Problems with one signal table (empty when it is well formed)."""
    if not isinstance(signal, dict):
        return [f"{where}: a signal must be a table"]
    kind = signal.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        return [f"{where}: unknown signal kind {kind!r} (known: {', '.join(sorted(KINDS))})"]
    spec = KINDS[kind]
    problems = [f"{where}: {kind} signal needs `{f}`" for f in sorted(spec.required - set(signal))]
    extra = set(signal) - spec.allowed - COMMON
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
    for f in ("depends_on", "arg_value", "bound_from", "pointer_depends"):
        if isinstance(signal.get(f), str):
            try:
                regex_module.compile(signal[f])
            except regex_module.error as exc:
                problems.append(f"{where}: invalid regex in `{f}`: {exc}")
    if problems or spec.check is None:
        return problems
    return spec.check(signal, where)


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



POOLED = "<all kernels>"


@dataclass
class Context:
    """Where kernel-scope signals look: the kernels of one unit (an entry kernel and its helpers),
    that kernel's launches and autotune configs. ``pooled`` contexts see every reachable kernel."""
    kernels: list[Kernel]
    launches: list[Call]
    configs: list[Call]
    unit: str = "<all kernels>"     # POOLED, or the unit's entry kernel
    tuners: list[Call] = field(default_factory=list)


def pooled(facts: SolutionFacts) -> Context:
    configs = [c for c in (facts.host.calls if facts.host else []) if c.name.endswith("Config")]
    configs += [d for k in facts.kernels for d in k.decorators if d.name.endswith("Config")]
    tuners = [d for k in facts.kernels for d in k.decorators if d.name.split(".")[-1] == "autotune"]
    tuners += [c for c in (facts.host.calls if facts.host else []) if c.name.split(".")[-1] == "autotune"]
    return Context(list(facts.kernels), list(facts.launches), configs, tuners=tuners)


def contexts(facts: SolutionFacts) -> list[Context]:
    """One context per unit (entry kernel with its helpers); one pooled context when there are none."""
    if not facts.units:
        return [pooled(facts)]
    by_name = {k.name: k for k in facts.kernels}
    out = []
    for u in facts.units:
        kernels = [by_name[m] for m in u.members if m in by_name]
        configs = list(u.configs) + [d for k in kernels for d in k.decorators if d.name.endswith("Config")]
        out.append(Context(kernels, list(u.launches), configs, u.kernel, list(u.tuners)))
    return out


def _name_matches(pattern: str, name: str) -> bool:
    base = name.split("[", 1)[0]
    return base == pattern or base.endswith("." + pattern)


def _scopes(facts: SolutionFacts, ctx: Context, scope: str) -> list[Kernel]:
    if scope == "host":
        return [facts.host] if facts.host else []
    if scope == "any":
        return [*ctx.kernels, *([facts.host] if facts.host else [])]
    return ctx.kernels


def _line_snippet(kernel: Kernel, line: int, fallback: str = "") -> str:
    if kernel.source and kernel.language != "host":
        lines = kernel.source.splitlines()
        idx = line - kernel.source_line
        if 0 <= idx < len(lines):
            return lines[idx].strip()[:160]
    return fallback[:160]


# -- values through the program (d2k/judge/program.py) ----------------------------------------------
def _program(facts: SolutionFacts):
    return getattr(facts, "program", None)


def _scope_at(program, line: int, kernel: str | None = None):
    """The innermost function of the program holding ``line`` (a kernel's own Func when named)."""
    if kernel:
        for f in program.funcs.values():
            if f.kernel and f.name == kernel:
                return f
    best = program.module
    for f in program.funcs.values():
        if f.qualname != "<module>" and f.line <= line <= f.end_line and (best is program.module or f.line >= best.line):
            best = f
    return best


def _parse(text: str):
    try:
        return ast_parse.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _value(facts: SolutionFacts, text: str, line: int, kernel: str | None = None, scope=None):
    program = _program(facts)
    expr = _parse(text)
    if program is None or expr is None:
        return None
    return program.value(expr, scope if scope is not None else _scope_at(program, line, kernel))


def _direct_texts(facts: SolutionFacts, kernel: Kernel, text: str) -> list[str]:
    """An argument's text and, for a name, the right-hand sides it was assigned from (following
    plain renames and self-updates such as ``p = p.to(bf16)``), not what those depend on."""
    import ast

    out = [text]
    program = _program(facts)
    expr = _parse(text)
    if program is None or expr is None or kernel.language == "cuda":
        return out
    scope = _scope_at(program, kernel.line, kernel.name if kernel.language == "triton" else None)
    # the names the argument is built from (x in `x * x`, p in `p`), one step back each
    names = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and not _is_callee(expr, n)]
    seen: set[str] = set()
    while names:
        n = names.pop()
        if n in seen:
            continue
        seen.add(n)
        for _, b in program._bindings(n, scope):
            rhs = ast.unparse(b.value)
            out.append(rhs)
            if isinstance(b.value, ast.Name):
                names.append(b.value.id)
            elif isinstance(b.value, ast.Call) and isinstance(b.value.func, ast.Attribute) \
                    and isinstance(b.value.func.value, ast.Name) and b.value.func.value.id == n:
                names.append(n)
    return out


def _is_callee(root, name_node) -> bool:
    """Is the name the function called (``f(x)``) or the object of a method call other than
    ``.to`` (``x.sum()``), rather than a value the argument is built from?"""
    import ast

    return any(isinstance(n, ast.Call) and (n.func is name_node or
                                            (isinstance(n.func, ast.Attribute) and n.func.value is name_node
                                             and n.func.attr != "to"))
               for n in ast.walk(root))


def _splat_keywords(facts: SolutionFacts, call: Call, scoped: bool = False) -> dict:
    """Keywords a call passes through ``**name``: the keys of the dict literal (or dict(...) call)
    the name is bound to in the calling function, or, for a parameter, at the function's call
    sites. With ``scoped``, each value comes with the function it must be evaluated in."""
    import ast

    program = _program(facts)
    out: dict = {}
    if program is None:
        return out
    for a in call.args:
        if not a.startswith("**"):
            continue
        expr = _parse(a[2:])
        if expr is None or not isinstance(expr, ast.Name):
            continue
        for scope, v in _name_sources(program, expr.id, _scope_at(program, call.line)):
            if isinstance(v, ast.IfExp):
                v = v.body if isinstance(v.body, (ast.Dict, ast.Call)) else v.orelse
            pairs = []
            if isinstance(v, ast.Dict):
                pairs = [(k.value, val) for k, val in zip(v.keys, v.values, strict=True)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            elif isinstance(v, ast.Call) and ast.unparse(v.func) == "dict":
                pairs = [(kw.arg, kw.value) for kw in v.keywords if kw.arg]
            for k, val in pairs:
                out.setdefault(k, (ast.unparse(val), scope) if scoped else ast.unparse(val))
    return out


def _name_sources(program, name: str, scope, depth: int = 0) -> list:
    """(scope, expression) pairs a name can hold: its assignments, or the arguments passed to it
    when it is a parameter (followed up to a few calls)."""
    import ast

    from d2k.judge.program import _bound_arg

    bindings = program._bindings(name, scope)
    if bindings:
        return [(s, b.value) for s, b in bindings if not b.iterate and b.index is None]
    owner = program._param_owner(name, scope)
    if owner is None or depth > 4:
        return []
    index = owner.params.index(name)
    out = []
    for site_scope, call in program.call_sites(owner):
        arg = _bound_arg(call, name, index)
        if arg is None:
            continue
        if isinstance(arg, ast.Name):
            out += _name_sources(program, arg.id, site_scope, depth + 1)
        else:
            out.append((site_scope, arg))
    return out


def _keywords(facts: SolutionFacts, call: Call) -> dict[str, str]:
    if not any(a.startswith("**") for a in call.args):
        return call.keywords
    return {**_splat_keywords(facts, call), **call.keywords}


def _config_items(call: Call, name: str, regex: bool = False, keywords: dict | None = None) -> str | None:
    """The text a call gives ``name`` (a keyword, or a key of a triton.Config's dict); with
    ``regex`` the name is a pattern every character of the keyword must match."""
    keywords = call.keywords if keywords is None else keywords
    if regex:
        for k, v in keywords.items():
            if re.fullmatch(name, k):
                return v
    text = keywords.get(name)
    if text is None and call.name.endswith("Config") and call.args:
        # triton.Config({"BLOCK_M": 128, ...}, num_warps=8): meta-parameters in the dict
        key = name if regex else re.escape(name)
        m = re.search(rf"['\"](?:{key})['\"]\s*:\s*([^,}}]+)", call.args[0])
        text = m.group(1).strip() if m else None
    return text


def _launch_arg(facts: SolutionFacts, ctx: Context, call: Call, name: str):
    """The argument a launch binds to ``name`` (a regex matching a keyword, or a kernel parameter
    passed by position): its text, or (text, scope) when it comes through a ``**kwargs`` dict."""
    for k, v in call.keywords.items():
        if re.fullmatch(name, k):
            return v
    for k, v in _splat_keywords(facts, call, scoped=True).items():
        if re.fullmatch(name, k):
            return v
    entry = next((k for k in ctx.kernels if k.language == "triton"), None)
    if entry is not None:
        for i, p in enumerate(entry.params):
            if re.fullmatch(name, p) and i < len(call.args) and not any(a.startswith("*") for a in call.args[: i + 1]):
                return call.args[i]
    return None


def evaluate(signal: dict, facts: SolutionFacts, ctx: Context | None = None) -> Result:
    """Does ``signal`` hold in ``ctx`` (one unit; every reachable kernel when None)?"""
    if ctx is None:
        ctx = pooled(facts)
    kind = KINDS.get(signal["kind"])
    if kind is None:
        raise ValueError(f"unknown signal kind {signal['kind']!r}")
    return kind.run(signal, facts, ctx)


# -- the kinds, in the order of the docs' table -------------------------------------------------------
@signal_kind("call", fields=("name", "in_loop?", "keyword?", "arg_contains?", "arg_index?", "arg_value?", "pointer?",
                             "pointer_depends?", "scope? (kernel/host/any)", "min_count?"))
def _call_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a call to `name` (exact dotted name, or its last parts: `rsqrt` matches `tl.math.rsqrt`)
    exists, optionally inside a loop, with a keyword, with an argument containing a text, with an
    argument (`arg_index`, else any) that is — or was assigned from, one step back, e.g.
    `p = p.to(bf16)` before `tl.dot(p, v)` — text matching `arg_value`, with a first argument
    derived from a kernel parameter matching `pointer`, or whose value (followed back) depends on
    something matching `pointer_depends`; at least `min_count` times"""
    ev = [Evidence(k.name, c.line, c.text) for k in _scopes(facts, ctx, signal.get("scope", "kernel"))
          for c in k.calls if _call_fits(signal, facts, k, c)]
    return Result(len(ev) >= int(signal.get("min_count", 1)), ev)


def _call_fits(signal: dict, facts: SolutionFacts, k: Kernel, c: Call) -> bool:
    """Does call ``c`` of ``k`` meet every condition of a call signal (checked in this order)?"""
    if not _name_matches(signal["name"], c.name):
        return False
    if "in_loop" in signal and (c.loop_depth > 0) != bool(signal["in_loop"]):
        return False
    if "keyword" in signal and signal["keyword"] not in c.keywords:
        return False
    index = signal.get("arg_index")
    args = c.args if index is None else c.args[index:index + 1]
    if "arg_contains" in signal and not any(signal["arg_contains"] in a for a in
                                            ([*args, *c.keywords.values()] if index is None else args)):
        return False
    if "arg_value" in signal and not any(regex_module.search(signal["arg_value"], t, timeout=PATTERN_TIMEOUT_S)
                                         for a in args for t in _direct_texts(facts, k, a)):
        return False
    if "pointer" in signal and not (c.args and re.search(signal["pointer"], pointer_base(k, c.args[0]))):
        return False
    return "pointer_depends" not in signal or bool(c.args and _depends(facts, k, c.args[0], c.line,
                                                                        signal["pointer_depends"]))


@signal_kind("keyword", fields=("name", "value?", "where? (config/launch/call/any)"))
def _keyword_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a keyword argument (`num_warps`, `launch_pdl`, `warp_specialize`, …; `**dict` included) is
    given in the unit's `triton.Config`s, launches or calls, optionally with a value (its text, or a
    number its value can take followed back: `num_stages=num_stages` returned as 2 or 3 by a helper)"""
    name, where = signal["name"], signal.get("where", "any")
    value = signal.get("value")
    sources: list[tuple[str, Call]] = []
    if where in ("config", "any"):
        sources += [(ctx.unit, c) for c in ctx.configs]
    if where in ("launch", "any"):
        sources += [("<host>", c) for c in ctx.launches]
    if where in ("call", "any"):
        for k in [*ctx.kernels, *([facts.host] if facts.host else [])]:
            sources += [(k.name, c) for c in k.calls if not c.name.endswith("Config") and "[" not in c.name]
    ev: list[Evidence] = []
    seen = set()
    for kname, c in sources:
        text = _config_items(c, name, keywords=_keywords(facts, c))
        if text is None or (value is not None and not _keyword_value_is(facts, c, text, value)):
            continue
        key = (c.line, c.text)
        if key not in seen:
            seen.add(key)
            ev.append(Evidence(kname, c.line, c.text))
    return Result(bool(ev), ev)


def _keyword_value_is(facts: SolutionFacts, call: Call, text: str, value) -> bool:
    """Is a keyword's argument ``value``: the same text, or a number its value, followed back
    through the program, can take (``num_stages=num_stages`` with ``num_stages`` returned as 2 or
    3 by a helper is 3)?"""
    if text.strip() == str(value):
        return True
    try:
        wanted = float(value)
    except (TypeError, ValueError):
        return False
    v = _value(facts, text, call.line)
    return bool(v is not None and v.numbers and any(isinstance(x, (int, float)) and x == wanted for x in v.numbers))


def _check_value(signal: dict, where: str) -> list[str]:
    problems = []
    if not isinstance(signal.get("of"), str):
        problems.append(f"{where}: value signal field `of` must be text (a keyword or parameter name)")
    else:
        try:
            re.compile(signal["of"])
        except re.error as exc:
            problems.append(f"{where}: invalid regex in `of`: {exc}")
    if signal.get("at", "any") not in ("launch", "config", "any"):
        problems.append(f"{where}: value signal field `at` must be launch, config or any")
    if not any(f in signal for f in ("varies", "depends_on", "min", "max")):
        problems.append(f"{where}: value signal needs one of `varies`, `depends_on`, `min`, `max`")
    return problems


@signal_kind("value", fields=("of (regex of a keyword, Config key or kernel parameter)", "at? (launch/config/any)",
                              "varies?", "depends_on?", "min?", "max?"), check=_check_value)
def _value_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """followed back through the program, what the unit's launches/configs give `of` is not one
    fixed number (`varies`), depends on a name matching `depends_on`, or can be within [`min`,
    `max`] (e.g. a config with `BLOCK_M <= 32`)"""
    if ctx.unit == POOLED and facts.units:
        # a launch or config value belongs to one kernel: num_warps "varies" when one kernel's
        # launches or configs give it several values, not when two kernels use two fixed ones
        for unit_ctx in contexts(facts):
            r = _value_in_unit(signal, facts, unit_ctx)
            if r.holds:
                return r
        return Result(False, [])
    return _value_in_unit(signal, facts, ctx)


@signal_kind("autotune", fields=("key_contains? (list)", "min_configs?"))
def _autotune_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """the unit's kernel is autotuned (decorator, or `triton.autotune(...)(kernel)`) with those
    `key=` names and enough configs"""
    ev: list[Evidence] = []
    for d in ctx.tuners:
        key = d.keywords.get("key", "")
        if any(f"'{w}'" not in key and f'"{w}"' not in key for w in signal.get("key_contains", [])):
            continue
        configs = d.keywords.get("configs", d.args[0] if d.args else "")
        # configs built elsewhere (a helper, a comprehension): count the unit's Config calls
        n_configs = configs.count("Config(") or len(ctx.configs)
        if n_configs < int(signal.get("min_configs", 1)):
            continue
        ev.append(Evidence(ctx.unit, d.line, d.text))
    return Result(bool(ev), ev)


def _check_regex(signal: dict, where: str) -> list[str]:
    try:
        regex_module.compile(signal.get("regex") or signal.get("pattern") or "")
    except regex_module.error as exc:
        return [f"{where}: invalid regex: {exc}"]
    return []


@signal_kind("constexpr", fields=("pattern (regex)",), check=_check_regex)
def _constexpr_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a kernel has a `tl.constexpr` parameter whose name matches"""
    pattern = regex_module.compile(signal["pattern"])  # the module `check` validated it with
    ev = [Evidence(k.name, k.line, f"{p}: tl.constexpr") for k in ctx.kernels for p in k.constexprs if pattern.search(p)]
    return Result(bool(ev), ev)


@signal_kind("pattern", fields=("regex", "scope? (kernel/file)"), check=_check_regex)
def _pattern_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """the regular expression matches a kernel's code (or the reachable code of the file), comments
    and strings excluded; run by the `regex` module with a 1 s limit per search, past which the item
    is `undetermined`"""
    ev: list[Evidence] = []
    if signal.get("scope", "kernel") == "file":
        for m in _finditer(signal["regex"], facts.code):  # reachable code; comments and strings are not evidence
            line = facts.code.count("\n", 0, m.start()) + 1
            ev.append(Evidence("<file>", line, facts.text.splitlines()[line - 1].strip()[:160]))
            if len(ev) >= 5:
                break
    else:
        for k in ctx.kernels:
            for m in _finditer(signal["regex"], k.code or k.source):
                line = _source_line(k, m.start())
                ev.append(Evidence(k.name, line, _line_snippet(k, line, m.group(0))))
                if len(ev) >= 5:
                    break
    return Result(bool(ev), ev, weak=True)


@signal_kind("constant", fields=("value", "rel_tol?", "scope? (kernel/host/any)"))
def _constant_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a numeric literal equal to `value` (e.g. 1.44269504)"""
    value, tol = float(signal["value"]), float(signal.get("rel_tol", 1e-6))
    ev = [Evidence(k.name, line, _line_snippet(k, line, str(number)))
          for k in _scopes(facts, ctx, signal.get("scope", "kernel"))
          for number, line in k.numbers if math.isclose(number, value, rel_tol=tol)]
    return Result(bool(ev), ev)


@signal_kind("kernels", fields=("min?", "max?"))
def _kernels_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """the number of reachable entry kernels (helpers excluded) is within bounds"""
    entries = facts.entry_kernels
    n = len(entries)
    ok = n >= int(signal.get("min", 0)) and ("max" not in signal or n <= int(signal["max"]))
    return Result(ok, [Evidence(k.name, k.line, f"kernel {k.name}") for k in entries] if ok else [])


@signal_kind("loop", fields=("contains_call?", "header_contains?", "bound_from?", "grid_stride?"))
def _loop_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a loop contains a call to that name / has that text in its header / has a range whose value
    depends on something matching `bound_from` (e.g. the KV loop bound follows `program_id`, through
    a helper's parameters) / is (`grid_stride = true`) or is not (`false`) a grid-stride loop over
    work items — `range(program_id, n, num_programs)`, a persistent kernel's row or tile loop, not
    a loop over one row's column chunks"""
    ev: list[Evidence] = []
    for k in ctx.kernels:
        for loop in k.loops:
            if "contains_call" in signal and not any(_name_matches(signal["contains_call"], c) for c in loop.calls):
                continue
            if "header_contains" in signal and signal["header_contains"] not in loop.header:
                continue
            if "bound_from" in signal and not _loop_bound_from(facts, k, loop, signal["bound_from"]):
                continue
            if "grid_stride" in signal and _grid_stride(facts, k, loop) != bool(signal["grid_stride"]):
                continue
            ev.append(Evidence(k.name, loop.line, loop.header))
    return Result(bool(ev), ev)


GRID_SIZE = r"(?i)num_programs|\bnum_sms\b|\bn_sms\b|\bsm_count\b|\bnum_ctas\b|\bgrid\w*"


def _grid_stride(facts: SolutionFacts, kernel: Kernel, loop: Loop) -> bool:
    """Is the loop ``for i in range(start, n, step)`` (or ``tl.range``) with a start that follows
    ``program_id`` and a step that follows the grid size (``tl.num_programs``, ``NUM_SMS``)?"""
    import ast

    program = _program(facts)
    node = program.loops.get(loop.line) if program is not None and kernel.language == "triton" else None
    if not isinstance(node, ast.For) or not isinstance(node.iter, ast.Call) or len(node.iter.args) < 3:
        return False
    if not re.search(r"(^|\.)range$", ast.unparse(node.iter.func)):
        return False
    scope = _scope_at(program, loop.line, kernel.name)
    start, step = (program.value(a, scope) for a in (node.iter.args[0], node.iter.args[2]))
    return bool(regex_module.search(r"program_id", "\n".join([*start.texts, *sorted(start.deps)]), timeout=PATTERN_TIMEOUT_S)
                and regex_module.search(GRID_SIZE, "\n".join([*step.texts, *sorted(step.deps)]), timeout=PATTERN_TIMEOUT_S))


@signal_kind("store_to_input", fields=("param?",))
def _store_to_input_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a kernel stores through a pointer parameter it also loads from (in place), or through one
    whose launch argument is the tensor it loads through another (`out = x`, `out = x if inplace
    else torch.empty_like(x)`, followed through the host functions' parameters)"""
    ev: list[Evidence] = []
    for k in ctx.kernels:
        loaded = {pointer_base(k, c.args[0]) for c in k.calls if _name_matches("load", c.name) and c.args}
        aliases = None
        for c in k.calls:
            if _name_matches("store", c.name) and c.args:
                base = pointer_base(k, c.args[0])
                if base not in k.params or signal.get("param", base) != base:
                    continue
                if base not in loaded:
                    if aliases is None:
                        aliases = _aliased_params(facts, k, loaded & set(k.params))
                    if base not in aliases:
                        continue
                ev.append(Evidence(k.name, c.line, c.text))
    return Result(bool(ev), ev)


def _aliased_params(facts: SolutionFacts, kernel: Kernel, loaded: set[str]) -> set[str]:
    """The kernel's pointer parameters that some launch binds to a tensor it also passes for one of
    the ``loaded`` parameters (the same host tensor under two parameters)."""
    program = _program(facts)
    unit = next((u for u in facts.units if u.kernel == kernel.name), None)
    if program is None or unit is None or kernel.language != "triton" or not loaded:
        return set()
    ctx = Context([kernel], unit.launches, [], unit.kernel)
    out: set[str] = set()
    for call in unit.launches:
        roots: dict[str, set] = {}
        for p in kernel.params:
            text = _launch_arg(facts, ctx, call, re.escape(p))
            scope = _scope_at(program, call.line)
            if isinstance(text, tuple):
                text, scope = text
            expr = _parse(text) if isinstance(text, str) else None
            if expr is not None:
                roots[p] = _tensor_roots(program, expr, scope)
        for p, r in roots.items():
            if p not in loaded and any(r & roots[q] for q in loaded if q in roots and q != p):
                out.add(p)
    return out


def _tensor_roots(program, expr, scope, depth: int = 0) -> set:
    """Where a host tensor expression comes from: an entry's parameter, or the expression that made
    it (an allocation, a view), followed through assignments, both arms of a conditional and the
    arguments a function's callers pass (``out = x if inplace else torch.empty_like(x)`` comes
    from ``x`` or from that ``empty_like``)."""
    import ast

    from d2k.judge.program import _bound_arg

    if depth > 6:
        return {("?", ast.dump(expr))}
    if isinstance(expr, ast.IfExp):
        return _tensor_roots(program, expr.body, scope, depth + 1) | _tensor_roots(program, expr.orelse, scope, depth + 1)
    if not isinstance(expr, ast.Name):
        return {("expr", scope.qualname, getattr(expr, "lineno", 0), getattr(expr, "col_offset", 0))}
    bindings = [(s, b) for s, b in program._bindings(expr.id, scope) if not b.iterate and b.index is None]
    if bindings:
        return set().union(*[_tensor_roots(program, b.value, s, depth + 1) for s, b in bindings])
    owner = program._param_owner(expr.id, scope)
    if owner is None:
        return {("name", expr.id)}
    index = owner.params.index(expr.id)
    if owner.cls and owner.params and owner.params[0] in ("self", "cls", "ctx"):
        index -= 1
    out = set()
    for site_scope, call in program.call_sites(owner):
        arg = _bound_arg(call, expr.id, index)
        if arg is not None:
            out |= _tensor_roots(program, arg, site_scope, depth + 1)
    return out or {("param", owner.qualname, expr.id)}


@signal_kind("program_id", fields=("axis",))
def _program_id_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """`tl.program_id(axis)` is read"""
    axis = str(signal["axis"])
    ev = [Evidence(k.name, c.line, c.text) for k in ctx.kernels for c in k.calls
          if _name_matches("program_id", c.name) and (c.args[:1] == [axis] or c.keywords.get("axis") == axis)]
    return Result(bool(ev), ev)


def _check_cuda(signal: dict, where: str) -> list[str]:
    if signal.get("feature") not in CUDA_FEATURES:
        return [f"{where}: cuda feature must be one of {', '.join(sorted(CUDA_FEATURES))}"]
    return []


@signal_kind("cuda", fields=(f"feature ({', '.join(CUDA_FEATURES)})",), check=_check_cuda)
def _cuda_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """a CUDA kernel (or a `__device__` function it calls) uses it"""
    feature = signal["feature"]
    ev = [Evidence(k.name, line, _line_snippet(k, line, feature)) for k in ctx.kernels for line in k.cuda.get(feature, [])]
    return Result(bool(ev), ev)


def _check_group(signal: dict, where: str) -> list[str]:
    if not isinstance(signal.get("of"), list) or not signal["of"]:
        return [f"{where}: `of` must be a non-empty list of signals"]
    return [p for i, sub in enumerate(signal["of"]) for p in check(sub, f"{where}.of.{i}")]


@signal_kind("all", "any", fields=("of (list)", "across?"), check=_check_group)
def _group_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """every / at least one of them holds (`all`: in one unit unless `across`)"""
    if signal["kind"] == "all" and not signal.get("across") and ctx.unit == POOLED and facts.units:
        return _all_in_one_unit(signal, facts)
    inner_ctx = pooled(facts) if signal.get("across") else ctx
    results = [evaluate(s, facts, inner_ctx) for s in signal["of"]]
    holds = all(r.holds for r in results) if signal["kind"] == "all" else any(r.holds for r in results)
    evidence = [e for r in results if r.holds for e in r.evidence]
    weak = all(r.weak for r in results if r.holds) if evidence else all(r.weak for r in results)
    return Result(holds, evidence if holds else [], weak)


def _all_in_one_unit(signal: dict, facts: SolutionFacts) -> Result:
    """An `all` group holds together in one unit: the first kernel (with its helpers) where all do,
    else the first unit's result."""
    first = None
    for unit_ctx in contexts(facts):
        r = _group_signal(signal, facts, unit_ctx)
        if r.holds:
            return r
        first = first or r
    return first or Result(False, [])


def _check_not(signal: dict, where: str) -> list[str]:
    return check(signal.get("signal"), f"{where}.signal")


@signal_kind("not", fields=("signal",), check=_check_not)
def _not_signal(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """the signal does not hold (in the unit, inside a group)"""
    inner = evaluate(signal["signal"], facts, ctx)
    return Result(not inner.holds, [], weak=True)


def _depends(facts: SolutionFacts, kernel: Kernel, text: str, line: int, pattern: str) -> bool:
    """Does an expression in a kernel depend on something matching ``pattern``, following
    assignments (and a helper's parameters to its call sites)? Loaded values are not followed."""
    program = _program(facts)
    expr = _parse(text)
    if program is None or expr is None or kernel.language != "triton":
        return bool(regex_module.search(pattern, text, timeout=PATTERN_TIMEOUT_S))
    v = program.value(expr, _scope_at(program, line, kernel.name))
    return bool(regex_module.search(pattern, "\n".join([text, *v.texts, *sorted(v.deps)]), timeout=PATTERN_TIMEOUT_S))


def _loop_bound_from(facts: SolutionFacts, kernel: Kernel, loop: Loop, pattern: str) -> bool:
    """Does the loop's range (its iterable, or a while condition) depend on something matching
    ``pattern``, following assignments and the arguments a helper is called with?"""
    import ast

    program = _program(facts)
    if program is None or kernel.language != "triton":
        return bool(regex_module.search(pattern, loop.header, timeout=PATTERN_TIMEOUT_S))
    node = program.loops.get(loop.line)
    if node is None:
        return bool(regex_module.search(pattern, loop.header, timeout=PATTERN_TIMEOUT_S))
    expr = node.iter if isinstance(node, ast.For) else node.test
    v = program.value(expr, _scope_at(program, loop.line, kernel.name))
    haystack = "\n".join([*v.texts, *sorted(v.deps)])
    return bool(regex_module.search(pattern, haystack, timeout=PATTERN_TIMEOUT_S))


def _value_in_unit(signal: dict, facts: SolutionFacts, ctx: Context) -> Result:
    """A value signal on one unit's launches and configs: ``varies`` looks at every site together;
    ``depends_on``, ``min`` and ``max`` hold at some site."""
    name, at = signal["of"], signal.get("at", "any")
    sites: list[tuple[Call, str, object]] = []
    if at in ("launch", "any"):
        for c in ctx.launches:
            text = _launch_arg(facts, ctx, c, name)
            if isinstance(text, tuple):
                sites.append((c, text[0], text[1]))
            elif text is not None:
                sites.append((c, text, None))
    if at in ("config", "any"):
        for c in ctx.configs:
            text = _config_items(c, name, regex=True)
            if text is not None:
                sites.append((c, text, None))
    if not sites:
        return Result(False, [])
    ev: list[Evidence] = []
    numbers: set = set()
    unknown = matched_dep = False
    in_range = []
    for c, text, scope in sites:
        v = _value(facts, text, c.line, scope=scope)
        if v is None:
            unknown = True
            continue
        if v.numbers is None:
            unknown = True
        else:
            numbers |= set(v.numbers)
        shown = f"{name} = {text}" + (f" -> {sorted(v.numbers)[:6]}" if v.numbers else "")
        if "depends_on" in signal:
            hay = "\n".join([*v.texts, *sorted(v.deps)])
            if regex_module.search(signal["depends_on"], hay, timeout=PATTERN_TIMEOUT_S):
                matched_dep = True
                ev.append(Evidence(ctx.unit, c.line, shown))
        lo, hi = signal.get("min"), signal.get("max")
        if lo is not None or hi is not None:
            if v.numbers:
                ok = any((lo is None or x >= lo) and (hi is None or x <= hi) for x in v.numbers
                         if isinstance(x, (int, float)))
            else:   # computed from inputs: its interval, when bounded on the side asked about
                a, b = v.interval
                ok = (lo is None or (b != math.inf and b >= lo)) and (hi is None or (a != -math.inf and a <= hi))
                shown += f" in [{a:g}, {b:g}]"
            if ok:
                in_range.append(Evidence(ctx.unit, c.line, shown))
    holds = True
    if "varies" in signal:
        varies = unknown or len(numbers) > 1
        holds &= varies == bool(signal["varies"])
    if "depends_on" in signal:
        holds &= matched_dep
    if "min" in signal or "max" in signal:
        holds &= bool(in_range)
        ev += in_range[:4]
    if holds and not ev:
        ev = [Evidence(ctx.unit, c.line, f"{name} = {t}") for c, t, _ in sites[:4]]
    return Result(holds, ev if holds else [])


def _source_line(kernel: Kernel, offset: int) -> int:
    """The file line of a character offset into ``kernel.source`` (or its blanked ``code``)."""
    return kernel.source_line + kernel.source.count("\n", 0, offset)


# -- the docs' table of kinds ----------------------------------------------------------------------------
DOCS = Path(__file__).resolve().parents[2] / "docs" / "judges.md"
DOCS_MARKERS = ("<!-- signal-kinds:start -->", "<!-- signal-kinds:end -->")


def kinds_markdown() -> str:
    """The table of signal kinds: their names, fields and when they hold."""
    rows = ["| kind | fields | holds when |", "|---|---|---|"]
    for kind in dict.fromkeys(KINDS.values()):
        names = " / ".join(f"`{n}`" for n in kind.names)
        fields = ", ".join(f"`{n}`{'?' if optional else ''}{' ' + note if note else ''}"
                           for n, optional, note in map(_field, kind.fields))
        rows.append(f"| {names} | {fields} | {' '.join(kind.run.__doc__.split())} |")
    return "\n".join(rows) + "\n"


def with_kinds_table(text: str) -> str:
    """``text`` (docs/judges.md) with ``kinds_markdown()`` between its signal-kinds markers."""
    start, end = DOCS_MARKERS
    head, found, rest = text.partition(start)
    if not found or end not in rest:
        raise ValueError(f"no {start} ... {end} markers")
    return f"{head}{start}\n{kinds_markdown()}{end}{rest.split(end, 1)[1]}"


if __name__ == "__main__":   # python -m d2k.judge.signals [--docs]: print the table [or rewrite it in docs/judges.md]
    import sys

    if "--docs" in sys.argv[1:]:
        DOCS.write_text(with_kinds_table(DOCS.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(kinds_markdown(), end="")
