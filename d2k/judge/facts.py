"""Facts from a solution's code, per kernel, parsed with tree-sitter.

Python/Triton is parsed with tree-sitter-python: every ``@triton.jit`` function is a kernel. CUDA
is parsed with tree-sitter-cuda, from ``.cu`` files or from CUDA source embedded in Python strings
(e.g. the text given to ``torch.utils.cpp_extension.load_inline``), with line numbers mapped back
to the file: every ``__global__`` function is a kernel. Host code (everything outside kernels) is
kept as a pseudo-kernel named ``<host>`` so signals can look at launches and host calls.

Facts are plain data (dataclasses) so they can be cached, stored and shown as evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

MAX_BYTES = 2 * 2**20  # larger files are not parsed: real kernels are far smaller

CUDA_VECTOR_TYPES = re.compile(r"\b(?:float[248]|half2|int[248]|uint[248]|__nv_bfloat162|__half2|"
                               r"double2|longlong2|char4|uchar4)\b")


@dataclass
class Call:
    name: str                 # dotted callee, e.g. "tl.dot", "tl.math.exp2", "x.to"
    line: int                 # 1-based line in the file
    loop_depth: int           # enclosing loops inside the kernel
    args: list[str]           # positional argument texts
    keywords: dict[str, str]  # keyword argument texts
    text: str                 # the call's source, truncated


@dataclass
class Loop:
    line: int
    kind: str                 # for | while
    header: str               # e.g. "for k in tl.range(0, K, BK, num_stages=3)"
    depth: int
    calls: list[str] = field(default_factory=list)   # callee names inside the loop body


@dataclass
class Kernel:
    name: str
    language: str             # triton | cuda | host
    line: int
    end_line: int
    params: list[str] = field(default_factory=list)
    constexprs: list[str] = field(default_factory=list)
    decorators: list[Call] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    numbers: list[tuple[float, int]] = field(default_factory=list)
    assigns: dict[str, str] = field(default_factory=dict)   # var -> first name of its (last) value
    source: str = ""
    source_line: int = 1      # the file line ``source`` starts at (a kernel's first decorator)
    code: str = field(default="", repr=False)   # source with comments and strings blanked (for patterns)
    # CUDA-only features: name -> lines
    cuda: dict[str, list[int]] = field(default_factory=dict)
    helper: bool = False      # a CUDA __device__ function (part of the kernels that call it)
    callees: list[str] = field(default_factory=list)   # CUDA: functions it calls (launches included)


_LEADING_NAME = re.compile(r"\s*\(?\s*([A-Za-z_]\w*)")   # the first name of an expression


def pointer_base(kernel: Kernel, expr: str) -> str:
    """The kernel parameter a pointer expression derives from, following simple assignments
    (``x_ptrs = X + offs`` then ``tl.load(x_ptrs)`` → ``X``); the first name when none is found."""
    m = _LEADING_NAME.match(expr)
    name = m.group(1) if m else ""
    seen = set()
    while name and name not in kernel.params and name in kernel.assigns and name not in seen:
        seen.add(name)
        name = kernel.assigns[name]
    return name


@dataclass
class Unit:
    """A kernel as it runs: the entry kernel, the jit helpers / __device__ functions it calls, its
    launch sites and the autotune configs it is launched with. Signals of one item are evaluated
    inside one unit, so evidence from a backward kernel cannot decide a forward kernel's item."""
    kernel: str
    members: list[str]                                   # the kernel first, then its helpers
    launches: list[Call] = field(default_factory=list)
    configs: list[Call] = field(default_factory=list)
    tuners: list[Call] = field(default_factory=list)     # triton.autotune calls (decorator or host-applied)


@dataclass
class SolutionFacts:
    path: str
    status: str               # ok | unparseable | no_kernel | dead_code | too_large | not_text | empty
    detail: str = ""
    kernels: list[Kernel] = field(default_factory=list)   # device kernels reachable from the entry point
    host: Kernel | None = None                            # reachable host code (module level + reachable functions)
    launches: list[Call] = field(default_factory=list)    # kernel[grid](...) sites in reachable host code
    lines: int = 0
    text: str = field(default="", repr=False)             # the whole file
    code: str = field(default="", repr=False)             # reachable code, comments and strings blanked
    all_kernels: list[Kernel] = field(default_factory=list)   # every device kernel in the file
    units: list[Unit] = field(default_factory=list)
    entry: str | None = None
    reach_note: str = ""      # how reachability was decided (no run(), a GPU profile, ...)
    unreached: list[str] = field(default_factory=list)    # kernels in the file that nothing reachable launches

    @property
    def entry_kernels(self) -> list[Kernel]:
        """Reachable kernels no other kernel calls (jit helpers and __device__ functions excluded)."""
        if self.units:
            names = {u.kernel for u in self.units}
            return [k for k in self.kernels if k.name in names]
        names = {k.name for k in self.kernels}
        called = {c.name.split(".")[-1] for k in self.kernels for c in k.calls} & names
        return [k for k in self.kernels if not k.helper and (k.name not in called or k.language == "cuda")]


# ---------------------------------------------------------------------------------------------
@cache
def _parsers():
    import tree_sitter_cuda
    import tree_sitter_python
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_python.language())), Parser(Language(tree_sitter_cuda.language()))


@cache
def _python_query():
    """One C-side pass collects what the Python walk would otherwise look for node by node."""
    import tree_sitter_python
    from tree_sitter import Language, Query

    return Query(Language(tree_sitter_python.language()),
                 "(comment) @blank (string) @blank (function_definition) @function")


def _captures(query, node) -> dict:
    from tree_sitter import QueryCursor

    return QueryCursor(query).captures(node)


def _text(node, limit: int | None = None) -> str:
    t = node.text.decode("utf-8", "replace")
    return t if limit is None or len(t) <= limit else t[:limit] + "…"


_NOT_NEWLINE = re.compile(rb"[^\n\r]")


def _blank_ranges(source: bytes, nodes) -> bytes:
    """``source`` with the given nodes' text replaced by spaces (newlines kept)."""
    out = bytearray(source)
    for n in nodes:
        out[n.start_byte:n.end_byte] = _NOT_NEWLINE.sub(b" ", source[n.start_byte:n.end_byte])
    return bytes(out)


def _blank_non_code(source: bytes, root) -> bytes:
    """``source`` with comments and string literals replaced by spaces (newlines kept)."""
    kinds = ("comment", "string", "string_literal", "raw_string_literal", "char_literal")
    nodes, stack = [], [root]
    while stack:
        n = stack.pop()
        if n.type in kinds:
            nodes.append(n)
            continue
        stack.extend(n.children)
    return _blank_ranges(source, nodes)


def without_prose(text: str, path: str = "") -> str:
    """A solution's source with its comments and docstrings blanked (line structure kept), for the
    LLM judge: prose in a solution is the model's own claim about its code, and a place to address
    the judge ("this implements every property"). Other strings stay: inline PTX and embedded CUDA
    sources are code (their own comments are blanked). A ``.cu``/``.cuh`` file is read as CUDA."""
    python, _ = _parsers()
    source = text.encode("utf-8", "replace")
    if path.endswith((".cu", ".cuh")):
        return _blank_ranges(source, _cuda_comments(source)).decode("utf-8", "replace")
    tree = python.parse(source)
    prose, embedded, stack = [], [], [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "comment":
            prose.append(n)
        elif n.type == "expression_statement" and len(n.named_children) == 1 and n.named_children[0].type in (
                "string", "concatenated_string"):
            prose.append(n)  # a docstring, or any bare string statement: prose, not code
        elif n.type == "string" and b"__global__" in source[n.start_byte:n.end_byte]:
            embedded.append(n)
        else:
            stack.extend(n.children)
    out = bytearray(_blank_ranges(source, prose))
    for n in embedded:  # a CUDA source in a string: its own comments (same length, lines kept)
        chunk = source[n.start_byte:n.end_byte]
        out[n.start_byte:n.end_byte] = _blank_ranges(chunk, _cuda_comments(chunk))
    return bytes(out).decode("utf-8", "replace")


def _cuda_comments(text: bytes) -> list:
    """The comment nodes of a CUDA source (held in a Python string, the quotes parse as noise)."""
    _, cu = _parsers()
    return list(_descendants(cu.parse(text).root_node, "comment"))


def _same(a, b) -> bool:
    # tree-sitter returns a new wrapper object for each access: compare by position
    return a.start_byte == b.start_byte and a.end_byte == b.end_byte and a.type == b.type


def _number(text: str) -> float | None:
    try:
        return float(int(text, 0)) if re.fullmatch(r"0[xXoObB][0-9a-fA-F_]+|\d[\d_]*", text) else float(text.rstrip("fFlLuU"))
    except ValueError:
        return None


# -- Python / Triton ---------------------------------------------------------------------------
def _py_call(node, line_offset: int, depth: int) -> Call:
    func = node.child_by_field_name("function")
    name = _text(func) if func is not None else ""
    name = re.sub(r"\s+", "", name)
    args, keywords = [], {}
    arglist = node.child_by_field_name("arguments")
    if arglist is not None:
        for a in arglist.named_children:
            if a.type == "keyword_argument":
                k, v = a.child_by_field_name("name"), a.child_by_field_name("value")
                if k is not None and v is not None:
                    keywords[_text(k)] = _text(v, 200)
            elif a.type != "comment":
                args.append(_text(a, 200))
    return Call(name, node.start_point[0] + 1 + line_offset, depth, args, keywords, _text(node, 160))


def _is_triton_jit(decorator_text: str) -> bool:
    return bool(re.search(r"\b(triton\.jit|jit)\b", decorator_text)) and "torch.jit" not in decorator_text


def _walk_py(node, kernel: Kernel, depth: int, loop_stack: list[Loop]):
    t = node.type
    if t == "call":
        call = _py_call(node, 0, depth)
        kernel.calls.append(call)
        for loop in loop_stack:
            loop.calls.append(call.name)
    elif t in ("integer", "float"):
        value = _number(_text(node))
        if value is not None:
            kernel.numbers.append((value, node.start_point[0] + 1))
    elif t in ("assignment", "augmented_assignment"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is not None and right is not None and left.type == "identifier":
            m = _LEADING_NAME.match(_text(right, 200))
            if m and m.group(1) != _text(left):
                kernel.assigns[_text(left)] = m.group(1)
    if t in ("for_statement", "while_statement"):
        body = node.child_by_field_name("body")
        header_end = body.start_byte if body is not None else node.end_byte
        header = node.text[: header_end - node.start_byte].decode("utf-8", "replace").strip().rstrip(":")
        loop = Loop(node.start_point[0] + 1, "for" if t == "for_statement" else "while",
                    re.sub(r"\s+", " ", header)[:200], depth + 1)
        kernel.loops.append(loop)
        for child in node.children:
            if body is not None and _same(child, body):
                _walk_py(child, kernel, depth + 1, [*loop_stack, loop])
            else:
                _walk_py(child, kernel, depth, loop_stack)
        return
    for child in node.children:
        _walk_py(child, kernel, depth, loop_stack)


def _py_params(fn) -> tuple[list[str], list[str]]:
    params, constexprs = [], []
    plist = fn.child_by_field_name("parameters")
    if plist is None:
        return params, constexprs
    for p in plist.named_children:
        name_node = p if p.type == "identifier" else (p.child_by_field_name("name")
                                                      or (p.named_children[0] if p.named_children else None))
        if name_node is None or name_node.type != "identifier":
            continue
        name = _text(name_node)
        params.append(name)
        annotation = p.child_by_field_name("type")
        if annotation is not None and "constexpr" in _text(annotation):
            constexprs.append(name)
    return params, constexprs


def _python_facts(source: bytes, path: str, entry: str | None, ran, backward: bool = True) -> SolutionFacts:
    py, _ = _parsers()
    tree = py.parse(source)
    root = tree.root_node
    facts = SolutionFacts(path=path, status="ok", lines=source.count(b"\n") + 1, text=source.decode(), entry=entry)
    if root.has_error:
        bad = _first_error(root)
        facts.status, facts.detail = "unparseable", f"Python syntax error near line {bad}"
        return facts
    host = Kernel(name="<host>", language="host", line=1, end_line=facts.lines)
    found = _captures(_python_query(), root)
    blanks = found.get("blank", [])
    code = _blank_ranges(source, blanks)
    facts.code = code.decode("utf-8", "replace")
    program = None
    try:
        from d2k.judge.program import Program

        program = Program(facts.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        facts.reach_note = f"Python's ast cannot read the file ({type(exc).__name__}): every kernel is judged"
    jit_lines = {f.line for f in program.kernels()} if program is not None else None
    kernel_ranges = []
    for fn in sorted(found.get("function", []), key=lambda n: n.start_byte):
        node = fn.parent if fn.parent is not None and fn.parent.type == "decorated_definition" else fn
        decorators = [d for d in node.children if d.type == "decorator"] if node is not fn else []
        if jit_lines is not None:
            if fn.start_point[0] + 1 not in jit_lines:
                continue
        elif not any(_is_triton_jit(_text(d)) for d in decorators):
            continue
        if any(a <= node.start_byte and node.end_byte <= b for a, b in kernel_ranges):
            continue   # a def nested in a kernel is part of it
        name = _text(fn.child_by_field_name("name"))
        kernel = Kernel(name=name, language="triton", line=fn.start_point[0] + 1, end_line=fn.end_point[0] + 1,
                        source=_text(node), source_line=node.start_point[0] + 1,
                        code=code[node.start_byte:node.end_byte].decode("utf-8", "replace"))
        kernel.params, kernel.constexprs = _py_params(fn)
        for d in decorators:
            for call_node in _descendants(d, "call"):
                kernel.decorators.append(_py_call(call_node, 0, 0))
        body = fn.child_by_field_name("body")
        if body is not None:
            _walk_py(body, kernel, 0, [])
        facts.kernels.append(kernel)
        kernel_ranges.append((node.start_byte, node.end_byte))
    # host code: everything outside kernels (launch sites, allocations, configs)
    _walk_host(root, host, kernel_ranges)
    host.source = ""
    facts.host = host
    if program is not None:
        _unalias_calls([*facts.kernels, host], program.aliases())
    kernel_names = {k.name for k in facts.kernels}
    for call in host.calls:
        base = call.name.split("[", 1)[0]
        if "[" in call.name and base.split(".")[-1] in kernel_names:
            facts.launches.append(call)
    # CUDA in Python strings
    cuda_host: list[tuple[str, list[str]]] = []
    for string_node in blanks:
        if string_node.type == "string" and b"__global__" in string_node.text:
            cuda_host += _cuda_into(facts, string_node.text, string_node.start_point[0], embedded=True)
    facts.all_kernels = list(facts.kernels)
    if not facts.kernels:
        facts.status, facts.detail = "no_kernel", "no @triton.jit or __global__ function found"
        return facts
    facts.program = program   # not a dataclass field: signals read values through it
    _restrict(facts, program, entry, ran, cuda_host, backward)
    return facts


def _unalias_calls(scopes: list[Kernel], aliases: dict[str, str]) -> None:
    """Read calls through module-level aliases of dotted names: with ``tl_exp2 = tl.exp2`` at
    module level, a kernel's ``tl_exp2(qk)`` is the call ``tl.exp2`` (in its loops too)."""
    if not aliases:
        return

    def canonical(name: str) -> str:
        head, dot, rest = name.partition(".")
        target = aliases.get(head.split("[", 1)[0]) if "[" not in head else None
        return target + dot + rest if target else name

    for k in scopes:
        for c in k.calls:
            c.name = canonical(c.name)
        for loop in k.loops:
            loop.calls = [canonical(n) for n in loop.calls]


def _cuda_closure(roots: set[str], kernels: list[Kernel], cuda_host: list[tuple[str, list[str]]]) -> set[str]:
    """CUDA functions reachable from ``roots`` through calls (kernel launches included)."""
    callees = {name: set(c) for name, c in cuda_host}
    for k in kernels:
        if k.language == "cuda":
            callees.setdefault(k.name, set()).update(k.callees)
    out, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n in out or n not in callees:
            continue
        out.add(n)
        stack.extend(callees[n])
    return out


def _restrict(facts: SolutionFacts, program, entry: str | None, ran, cuda_host, backward: bool = True) -> None:
    """Keep only what runs: the kernels, host code and launches reachable from ``entry``."""
    from d2k.judge import program as program_mod

    cuda = [k for k in facts.all_kernels if k.language == "cuda"]
    if program is None:
        reached = {k.name for k in facts.all_kernels}
        launched, helpers, dead_lines = {}, {}, []
    else:
        reach = program_mod.reachable(program, entry, backward)
        if reach.note:
            facts.reach_note = "; ".join(x for x in (facts.reach_note, reach.note) if x)
        reached = set(reach.kernels)
        if cuda:
            names = {k.name for k in cuda} | {n for n, _ in cuda_host}
            roots: set[str] = set()
            if reach.cuda_modules:
                roots = {a for a in reach.cuda_attrs if a in names}
                if not roots:   # the module's functions are not in the file: every __global__ may run
                    roots = {k.name for k in cuda if not k.helper}
            reached |= _cuda_closure(roots, cuda, cuda_host)
        launched, helpers = reach.launched, reach.helpers
        dead_lines = _dead_ranges(program, reach)
    if ran is not None:
        matched = {k.name for k in facts.all_kernels if not k.helper and any(k.name in r for r in ran)}
        if matched:
            confirmed = sorted(matched - reached)
            reached |= matched
            for k in matched:
                reached |= helpers.get(k, set())
            if cuda:
                reached |= _cuda_closure(matched, cuda, cuda_host)
            facts.reach_note = "; ".join(x for x in (facts.reach_note, "the GPU profile confirms " + ", ".join(sorted(matched))
                                                     + (f" (added: {', '.join(confirmed)})" if confirmed else "")) if x)
        elif len(ran) < 20:
            reached = set()
            facts.reach_note = "; ".join(x for x in (facts.reach_note, "none of the file's kernels ran in the GPU profile") if x)
    facts.kernels = [k for k in facts.all_kernels if k.name in reached]
    facts.unreached = [k.name for k in facts.all_kernels if k.name not in reached and not k.helper]
    if not facts.kernels:
        facts.status = "dead_code"
        facts.detail = (f"no kernel is reachable from {entry}(): " if entry else "no kernel is reachable: ") + \
            (", ".join(facts.unreached) + " never launched" if facts.unreached else "nothing launches a kernel")
        return
    # host code: module level and reachable functions only
    if dead_lines:
        def alive(line):
            return not any(a <= line <= b for a, b in dead_lines)
        facts.host.calls = [c for c in facts.host.calls if alive(c.line)]
        facts.host.numbers = [n for n in facts.host.numbers if alive(n[1])]
        lines = facts.code.split("\n")
        for a, b in dead_lines:
            for i in range(a - 1, min(b, len(lines))):
                lines[i] = " " * len(lines[i])
        facts.code = "\n".join(lines)
    kernel_by = {k.name: k for k in facts.kernels}
    # launches: by name (kernel[grid]) and through aliases the program resolved
    launch_lines = {(call.lineno, kname) for kname, sites in launched.items() for _, call in sites}
    unit_launches: dict[str, list[Call]] = {}
    facts.launches = []
    for c in facts.host.calls:
        if "[" not in c.name and not c.name.endswith((".run", ".warmup")):
            continue
        base = c.name.split("[", 1)[0].split(".")[-1]
        targets = {k for (line, k) in launch_lines if line == c.line and k in kernel_by}
        if "[" in c.name and base in kernel_by:
            targets.add(base)
        if targets:
            facts.launches.append(c)
            for k in targets:
                unit_launches.setdefault(k, []).append(c)
    # units: each kernel that is launched (or reached from host code) with the helpers it calls
    helper_names = set()
    for k in facts.kernels:
        if k.language == "triton":
            helper_names |= helpers.get(k.name, set())
    cuda_reached = {k.name for k in facts.kernels if k.language == "cuda"}
    configs_all = [c for c in facts.host.calls if c.name.endswith("Config")]
    facts.units = []
    for k in facts.kernels:
        if k.helper or (k.language == "triton" and k.name in helper_names and k.name not in unit_launches):
            continue
        if k.language == "cuda":
            members = [k.name] + sorted((_cuda_closure({k.name}, facts.all_kernels, []) - {k.name}) & cuda_reached)
        else:
            members = [k.name] + sorted(helpers.get(k.name, set()) & set(kernel_by))
        tuners, configs = _unit_configs(k, program, facts, configs_all) if k.language == "triton" else ([], [])
        facts.units.append(Unit(k.name, members, unit_launches.get(k.name, []), configs, tuners))


def _dead_ranges(program, reach) -> list[tuple[int, int]]:
    """Line ranges of code that never runs: unreached functions and kernels, `__main__` blocks."""
    out = []
    for q, f in program.funcs.items():
        if q == "<module>" or q in reach.functions:
            continue
        start = min([f.line] + [d.lineno for d in f.decorators])
        out.append((start, f.end_line))
    out += program.dead   # __main__ blocks, interpreter-only branches
    return out


def _unit_configs(kernel: Kernel, program, facts: SolutionFacts, configs_all: list[Call]) -> tuple[list[Call], list[Call]]:
    """The autotune calls of a kernel (its decorator, or ``triton.autotune(...)(kernel)`` in host
    code) and the triton.Config calls it is tuned over: in the decorator, or in what ``configs=``
    names (a module list, a function building them); every reachable Config when unresolvable."""
    import ast as ast_mod

    own = [d for d in kernel.decorators if d.name.endswith("Config")]
    tuners = [d for d in kernel.decorators if d.name.split(".")[-1] == "autotune"]
    if not tuners and program is not None:
        host_tuners = [c for c in facts.host.calls if c.name.split(".")[-1] == "autotune"]
        for f in program.funcs.values():
            for call in f.calls:
                inner = call.func
                if isinstance(inner, ast_mod.Call) and re.search(r"(^|\.)autotune$", ast_mod.unparse(inner.func)) \
                        and any(isinstance(a, ast_mod.Name) and a.id == kernel.name for a in call.args):
                    tuners += [c for c in host_tuners if c.line == inner.lineno]
    if not tuners:
        return [], own
    if own or program is None:
        return tuners, own or configs_all
    spans = []
    for tune in tuners:
        text = tune.keywords.get("configs", tune.args[0] if tune.args else "")
        try:
            expr = ast_mod.parse(text, mode="eval").body
        except SyntaxError:
            return tuners, configs_all
        spans.append((tune.line, tune.line + tune.text.count("\n")))
        for n in ast_mod.walk(expr):
            if isinstance(n, ast_mod.Name):
                for q in program.by_name(n.id):
                    f = program.funcs[q]
                    spans.append((f.line, f.end_line))
                for b in program.module.bindings.get(n.id, []):
                    spans.append((b.value.lineno, getattr(b.value, "end_lineno", b.value.lineno)))
    picked = [c for c in configs_all if any(a <= c.line <= b for a, b in spans)]
    return tuners, picked or configs_all


def _walk_host(root, host: Kernel, kernel_ranges):
    # with a stack, not recursion: a solution's expression nested thousands deep (a long chain of
    # binary operators) ran the recursive walk out of stack (red team G, session 21)
    stack = [root]
    while stack:
        node = stack.pop()
        if any(a <= node.start_byte and node.end_byte <= b for a, b in kernel_ranges):
            continue
        if node.type == "call":
            host.calls.append(_py_call(node, 0, 0))
        elif node.type in ("integer", "float"):
            value = _number(_text(node))
            if value is not None:
                host.numbers.append((value, node.start_point[0] + 1))
        stack.extend(reversed(node.children))


def _descendants(node, type_name):
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == type_name:
            yield n
        stack.extend(reversed(n.children))


def _first_error(root) -> int:
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            return n.start_point[0] + 1
        if n.has_error:
            stack.extend(reversed(n.children))
    return root.start_point[0] + 1


# -- CUDA ----------------------------------------------------------------------------------------
CUDA_FEATURES = {
    "shared": re.compile(r"__shared__"),
    "syncthreads": re.compile(r"__syncthreads\s*\(|__syncwarp\s*\(|\.sync\(\)"),
    "shuffle": re.compile(r"__shfl_\w+"),
    "pragma_unroll": re.compile(r"#\s*pragma\s+unroll"),
    "launch_bounds": re.compile(r"__launch_bounds__"),
    "atomic": re.compile(r"\batomic\w+\s*\("),
    "vector_type": CUDA_VECTOR_TYPES,
}


def _cuda_into(facts: SolutionFacts, raw: bytes, line_offset: int, embedded: bool) -> list[tuple[str, list[str]]]:
    """Add the CUDA kernels (``__global__``) and device functions (``__device__``, as helpers) of a
    source to ``facts``; return its host functions as (name, callees) for the call graph."""
    _, cu = _parsers()
    text = raw
    if embedded:
        # strip the Python string delimiters (and any prefix such as r or f); keep line structure
        decoded = raw.decode("utf-8", "replace")
        m = re.match(r'^[rRbBuUfF]*("""|\'\'\'|"|\')', decoded)
        quote = m.group(1) if m else ""
        inner = decoded[len(m.group(0)) if m else 0:]
        if quote and inner.endswith(quote):
            inner = inner[: -len(quote)]
        text = inner.encode()
    tree = cu.parse(text)
    source_lines = text.decode("utf-8", "replace").splitlines()
    blanked = _blank_non_code(text, tree.root_node)  # comments and strings are not evidence
    code_lines = blanked.decode("utf-8", "replace").splitlines()
    host_functions = []
    for fn in _descendants(tree.root_node, "function_definition"):
        body = fn.child_by_field_name("body")
        head = text[fn.start_byte: body.start_byte if body else fn.end_byte]
        # tree-sitter-cuda may attach __global__ to a preceding node; look at the line too
        line_text = source_lines[fn.start_point[0]] if fn.start_point[0] < len(source_lines) else ""
        prev_text = source_lines[fn.start_point[0] - 1] if 0 < fn.start_point[0] <= len(source_lines) else ""
        is_global = b"__global__" in head or "__global__" in line_text
        is_device = not is_global and (b"__device__" in head or "__device__" in line_text
                                       or ("__device__" in prev_text and "template" in prev_text))
        declarator = fn.child_by_field_name("declarator")
        name_node = declarator
        while name_node is not None and name_node.type not in ("identifier", "field_identifier"):
            inner_decl = name_node.child_by_field_name("declarator")
            if inner_decl is None:   # qualified names (ns::f), operators: the last identifier
                ids = list(_descendants(name_node, "identifier"))
                name_node = ids[-1] if ids else None
                break
            name_node = inner_decl
        name = _text(name_node) if name_node is not None else "<cuda kernel>"
        callees = sorted({_cuda_callee(c) for c in _descendants(fn, "call_expression")} - {""})
        if not (is_global or is_device):
            host_functions.append((name, callees))
            continue
        start = fn.start_point[0] + 1 + line_offset
        kernel = Kernel(name=name, language="cuda", line=start, end_line=fn.end_point[0] + 1 + line_offset,
                        source=_text(fn), source_line=start,
                        code=blanked[fn.start_byte:fn.end_byte].decode("utf-8", "replace"),
                        helper=is_device, callees=callees)
        params = fn.child_by_field_name("declarator")
        if params is not None:
            for p in _descendants(params, "parameter_declaration"):
                ids = [c for c in _descendants(p, "identifier")]
                if ids:
                    kernel.params.append(_text(ids[-1]))
        _walk_cuda(fn, kernel, 0, [], line_offset)
        # the lines before the function can hold __launch_bounds__ / templates
        prefix_start = max(0, fn.start_point[0] - 2)
        for feature, pattern in CUDA_FEATURES.items():
            hits = [i + 1 + line_offset
                    for i, line in enumerate(code_lines[prefix_start: fn.end_point[0] + 1], start=prefix_start)
                    if pattern.search(line)]
            if hits:
                kernel.cuda[feature] = hits
        facts.kernels.append(kernel)
    return host_functions


def _cuda_callee(call) -> str:
    func = call.child_by_field_name("function")
    if func is None:
        return ""
    if func.type == "identifier":
        return _text(func)
    ids = [n for n in _descendants(func, "identifier")] + [n for n in _descendants(func, "field_identifier")]
    if func.type in ("template_function", "qualified_identifier") and ids:
        name = func.child_by_field_name("name")
        return _text(name) if name is not None and name.type == "identifier" else _text(ids[-1])
    return _text(ids[-1]) if ids else ""


def _walk_cuda(node, kernel: Kernel, depth: int, loop_stack: list[Loop], line_offset: int):
    t = node.type
    if t == "call_expression":
        func = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [_text(a, 200) for a in args_node.named_children] if args_node is not None else []
        call = Call(re.sub(r"\s+", "", _text(func)) if func is not None else "", node.start_point[0] + 1 + line_offset,
                    depth, args, {}, _text(node, 160))
        kernel.calls.append(call)
        for loop in loop_stack:
            loop.calls.append(call.name)
    elif t == "number_literal":
        value = _number(_text(node))
        if value is not None:
            kernel.numbers.append((value, node.start_point[0] + 1 + line_offset))
    if t in ("for_statement", "while_statement", "do_statement"):
        body = node.child_by_field_name("body")
        header_end = body.start_byte if body is not None else node.end_byte
        header = node.text[: header_end - node.start_byte].decode("utf-8", "replace")
        loop = Loop(node.start_point[0] + 1 + line_offset, t.split("_")[0], re.sub(r"\s+", " ", header).strip()[:200], depth + 1)
        kernel.loops.append(loop)
        for child in node.children:
            inside = body is not None and _same(child, body)
            _walk_cuda(child, kernel, depth + 1 if inside else depth, [*loop_stack, loop] if inside else loop_stack, line_offset)
        return
    for child in node.children:
        _walk_cuda(child, kernel, depth, loop_stack, line_offset)


# -- entry point ---------------------------------------------------------------------------------
def extract(source: bytes | str, path: str = "<solution>", entry: str | None = "run", ran=None,
            backward: bool = True) -> SolutionFacts:
    """Facts of one solution file, restricted to what ``entry`` reaches (every host function is an
    entry when the file has no ``entry``; ``entry=None`` makes that so). ``ran``: kernel names a GPU
    profile saw run (optional), which confirm or add kernels. ``backward``: whether the task takes a
    gradient, so that a ``torch.autograd.Function``'s backward runs (``takes_gradient``). Never
    raises on bad input: the status says what was wrong."""
    if isinstance(source, str):
        source = source.encode("utf-8", "surrogateescape")
    if len(source) > MAX_BYTES:
        return SolutionFacts(path, "too_large", f"{len(source) / 2**20:.1f} MB is over the {MAX_BYTES // 2**20} MB limit")
    if not source.strip():
        return SolutionFacts(path, "empty", "the file is empty")
    if b"\x00" in source:
        return SolutionFacts(path, "not_text", "the file contains NUL bytes (binary, not source)")
    try:
        source.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SolutionFacts(path, "not_text", f"not UTF-8 text (byte {exc.start})")
    ran = {str(r) for r in ran} if ran is not None else None
    if path.endswith((".cu", ".cuh")):
        facts = SolutionFacts(path=path, status="ok", lines=source.count(b"\n") + 1, text=source.decode())
        facts.code = _blank_non_code(source, _parsers()[1].parse(source).root_node).decode("utf-8", "replace")
        facts.host = Kernel(name="<host>", language="host", line=1, end_line=facts.lines)
        cuda_host = _cuda_into(facts, source, 0, embedded=False)
        facts.all_kernels = list(facts.kernels)
        if not any(not k.helper for k in facts.kernels):
            facts.status, facts.detail = "no_kernel", "no __global__ function found"
            return facts
        # a .cu file has no Python entry point: its host functions (the bindings' targets) are the roots
        roots = {n for n, _ in cuda_host} or {k.name for k in facts.kernels if not k.helper}
        reached = _cuda_closure(roots, facts.kernels, cuda_host)
        facts.reach_note = "a CUDA file: every host function is an entry"
        facts.kernels = [k for k in facts.all_kernels if k.name in reached]
        facts.unreached = [k.name for k in facts.all_kernels if k.name not in reached and not k.helper]
        if not facts.kernels:
            facts.status, facts.detail = "dead_code", "no host function launches a __global__ kernel"
            return facts
        names = {k.name for k in facts.kernels}
        facts.units = [Unit(k.name, [k.name] + sorted((_cuda_closure({k.name}, facts.kernels, []) - {k.name}) & names))
                       for k in facts.kernels if not k.helper]
        return facts
    return _python_facts(source, path, entry, ran, backward)
