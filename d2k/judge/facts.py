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
from dataclasses import asdict, dataclass, field
from functools import lru_cache

MAX_BYTES = 2 * 2**20  # larger files are not parsed: real kernels are far smaller

CUDA_VECTOR_TYPES = re.compile(r"\b(?:float[248]|half2|int[248]|uint[248]|__nv_bfloat162|__half2|double2|longlong2|char4|uchar4)\b")


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


_LEADING_NAME = re.compile(r"\s*\(?\s*([A-Za-z_]\w*)")   # the first name of an expression


def pointer_base(kernel: "Kernel", expr: str) -> str:
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
class SolutionFacts:
    path: str
    status: str               # ok | unparseable | no_kernel | too_large | not_text | empty
    detail: str = ""
    kernels: list[Kernel] = field(default_factory=list)   # device kernels
    host: Kernel | None = None                            # module code outside kernels
    launches: list[Call] = field(default_factory=list)    # kernel[grid](...) sites
    lines: int = 0
    text: str = field(default="", repr=False)             # the whole file
    code: str = field(default="", repr=False)             # the file with comments and strings blanked

    @property
    def entry_kernels(self) -> list[Kernel]:
        """Kernels no other kernel calls (device helper functions excluded)."""
        names = {k.name for k in self.kernels}
        called = {c.name.split(".")[-1] for k in self.kernels for c in k.calls} & names
        return [k for k in self.kernels if k.name not in called or k.language == "cuda"]

    @property
    def all_scopes(self) -> list[Kernel]:
        return [*self.kernels, *([self.host] if self.host else [])]

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _parsers():
    import tree_sitter_cuda
    import tree_sitter_python
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_python.language())), Parser(Language(tree_sitter_cuda.language()))


@lru_cache(maxsize=None)
def _python_query():
    """One C-side pass collects what the Python walk would otherwise look for node by node."""
    import tree_sitter_python
    from tree_sitter import Language, Query

    return Query(Language(tree_sitter_python.language()),
                 "(comment) @blank (string) @blank (decorated_definition) @definition")


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
        loop = Loop(node.start_point[0] + 1, "for" if t == "for_statement" else "while", re.sub(r"\s+", " ", header)[:200], depth + 1)
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
        name_node = p if p.type == "identifier" else (p.child_by_field_name("name") or (p.named_children[0] if p.named_children else None))
        if name_node is None or name_node.type != "identifier":
            continue
        name = _text(name_node)
        params.append(name)
        annotation = p.child_by_field_name("type")
        if annotation is not None and "constexpr" in _text(annotation):
            constexprs.append(name)
    return params, constexprs


def _python_facts(source: bytes, path: str) -> SolutionFacts:
    py, _ = _parsers()
    tree = py.parse(source)
    root = tree.root_node
    facts = SolutionFacts(path=path, status="ok", lines=source.count(b"\n") + 1, text=source.decode())
    if root.has_error:
        bad = _first_error(root)
        facts.status, facts.detail = "unparseable", f"Python syntax error near line {bad}"
        return facts
    host = Kernel(name="<host>", language="host", line=1, end_line=facts.lines)
    found = _captures(_python_query(), root)
    blanks = found.get("blank", [])
    code = _blank_ranges(source, blanks)
    facts.code = code.decode("utf-8", "replace")
    kernel_ranges = []
    for node in sorted(found.get("definition", []), key=lambda n: n.start_byte):
        decorators = [d for d in node.children if d.type == "decorator"]
        fn = node.child_by_field_name("definition")
        if fn is None or fn.type != "function_definition":
            continue
        if not any(_is_triton_jit(_text(d)) for d in decorators):
            continue
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
    kernel_names = {k.name for k in facts.kernels}
    for call in host.calls:
        base = call.name.split("[", 1)[0]
        if "[" in call.name and base.split(".")[-1] in kernel_names:
            facts.launches.append(call)
    # CUDA in Python strings
    for string_node in blanks:
        if string_node.type == "string" and b"__global__" in string_node.text:
            _cuda_into(facts, string_node.text, string_node.start_point[0], embedded=True)
    if not facts.kernels:
        facts.status, facts.detail = "no_kernel", "no @triton.jit or __global__ function found"
    return facts


def _walk_host(node, host: Kernel, kernel_ranges):
    if any(a <= node.start_byte and node.end_byte <= b for a, b in kernel_ranges):
        return
    if node.type == "call":
        host.calls.append(_py_call(node, 0, 0))
    elif node.type in ("integer", "float"):
        value = _number(_text(node))
        if value is not None:
            host.numbers.append((value, node.start_point[0] + 1))
    for child in node.children:
        _walk_host(child, host, kernel_ranges)


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


def _cuda_into(facts: SolutionFacts, raw: bytes, line_offset: int, embedded: bool) -> None:
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
    for fn in _descendants(tree.root_node, "function_definition"):
        head = text[fn.start_byte: fn.child_by_field_name("body").start_byte if fn.child_by_field_name("body") else fn.end_byte]
        if b"__global__" not in head:
            # tree-sitter-cuda may attach __global__ to a preceding node; look at the line too
            line_text = source_lines[fn.start_point[0]] if fn.start_point[0] < len(source_lines) else ""
            if "__global__" not in line_text:
                continue
        declarator = fn.child_by_field_name("declarator")
        name_node = declarator
        while name_node is not None and name_node.type not in ("identifier", "field_identifier"):
            name_node = name_node.child_by_field_name("declarator")
        name = _text(name_node) if name_node is not None else "<cuda kernel>"
        start = fn.start_point[0] + 1 + line_offset
        kernel = Kernel(name=name, language="cuda", line=start, end_line=fn.end_point[0] + 1 + line_offset,
                        source=_text(fn), source_line=start,
                        code=blanked[fn.start_byte:fn.end_byte].decode("utf-8", "replace"))
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
def extract(source: bytes | str, path: str = "<solution>") -> SolutionFacts:
    """Facts of one solution file. Never raises on bad input: the status says what was wrong."""
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
    if path.endswith((".cu", ".cuh")):
        facts = SolutionFacts(path=path, status="ok", lines=source.count(b"\n") + 1, text=source.decode())
        facts.code = _blank_non_code(source, _parsers()[1].parse(source).root_node).decode("utf-8", "replace")
        _cuda_into(facts, source, 0, embedded=False)
        if not facts.kernels:
            facts.status, facts.detail = "no_kernel", "no __global__ function found"
        return facts
    return _python_facts(source, path)


def extract_file(path) -> SolutionFacts:
    from pathlib import Path

    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            return SolutionFacts(str(path), "too_large", f"{size / 2**20:.1f} MB is over the {MAX_BYTES // 2**20} MB limit")
        return extract(p.read_bytes(), str(path))
    except OSError as exc:
        return SolutionFacts(str(path), "not_text", f"cannot read: {exc.strerror}")
