"""What runs: the call graph of a Python solution from its entry point, and values through it.

The static judge looks only at code reachable from the task's entry point (``run``): host
functions it calls (directly, through aliases, classes such as ``torch.autograd.Function``, or
dispatch tables), the ``@triton.jit`` kernels those functions launch (``kernel[grid](...)``,
through ``triton.autotune(...)(kernel)`` wrappers and local aliases), the jit helpers the kernels
call, and CUDA functions reached through ``torch.utils.cpp_extension.load_inline`` modules (see
``cuda_graph``). A name counts as reaching what it refers to wherever it is read, so a kernel
chosen by a conditional or stored in a table is reached; a function nothing reachable names is
not, and neither is the code under ``if __name__ == "__main__":``.

Values: ``Program.value`` follows a host or kernel expression back through simple assignments
(tuple unpacking from a function's ``return`` included), through the parameters of a function to
the arguments of its call sites, through module constants and through the variables of loops and
comprehensions (``for bm in [16, 32]``), and gives the set of numbers it can take (when every leaf
is a literal) and every name it depends on. This is what lets a signal ask "is num_warps a
function of the block size" rather than "is the keyword present".

The tree-sitter facts (``facts.py``) stay the source of kernels, calls and loops; this module uses
Python's own ``ast`` on the same text for scopes and expressions. A file ``ast`` cannot read (a
syntax newer than the running Python) is judged whole, as before, with a note saying so.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from dataclasses import dataclass, field

from d2k import ast_parse

MAX_VALUES = 64        # a value with more possible numbers than this is "many" (None)
MAX_DEPTH = 12         # how far a value is followed back (assignments, calls)


@dataclass
class Binding:
    value: ast.expr
    index: int | None = None     # position in a tuple target (a, b = f())
    iterate: bool = False        # a loop / comprehension variable: an element of ``value``
    line: int = 0


@dataclass
class Func:
    qualname: str
    name: str
    line: int
    end_line: int
    cls: str | None = None           # the class a method belongs to
    parent: str | None = None        # the enclosing function's qualname
    params: list[str] = field(default_factory=list)
    defaults: dict[str, ast.expr] = field(default_factory=dict)
    kernel: bool = False             # @triton.jit (or made one with triton.jit(fn))
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    refs: set[str] = field(default_factory=set)                  # identifiers read
    attr_refs: set[tuple[str, str]] = field(default_factory=set)  # (base, attribute) read
    calls: list[ast.Call] = field(default_factory=list)
    returns: list[ast.expr] = field(default_factory=list)
    decorators: list[ast.expr] = field(default_factory=list)
    nested: dict[str, str] = field(default_factory=dict)         # local def name -> qualname


def _is_jit_decorator(d: ast.expr) -> bool:
    text = ast.unparse(d)
    return bool(re.search(r"\b(triton\.jit|jit)\b", text)) and "torch.jit" not in text


def _call_name(node: ast.expr) -> str:
    try:
        return re.sub(r"\s+", "", ast.unparse(node))
    except Exception:  # pragma: no cover - ast.unparse handles every expression
        return ""


def _target_names(target: ast.expr) -> list[tuple[str, int | None]]:
    if isinstance(target, ast.Name):
        return [(target.id, None)]
    if isinstance(target, (ast.Tuple, ast.List)):
        out = []
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Name):
                out.append((elt.id, i))
            elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
                out.append((elt.value.id, None))
        return out
    return []


class _ScopeCollector(ast.NodeVisitor):
    """Bindings, reads, calls and returns of one scope, without entering nested defs/classes."""

    def __init__(self, func: Func, program: Program):
        self.f = func
        self.program = program

    def bind(self, name, value, index=None, iterate=False, line=0):
        self.f.bindings.setdefault(name, []).append(Binding(value, index, iterate, line))

    def visit_FunctionDef(self, node):
        self.f.nested[node.name] = self.program._add_function(node, cls=None, parent=self.f)
        for d in node.decorator_list:   # decorators run in this scope
            self.visit(d)
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.program._add_class(node, parent=self.f)
        for b in node.bases:
            self.visit(b)
        for d in node.decorator_list:
            self.visit(d)

    def visit_Lambda(self, node):
        self.generic_visit(node)

    def visit_Assign(self, node):
        for t in node.targets:
            for name, index in _target_names(t):
                self.bind(name, node.value, index, line=node.lineno)
            if isinstance(t, ast.Attribute):
                self.program._attr_assign(self.f, t, node.value)
            if not isinstance(t, ast.Name):
                self.visit(t)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            for name, index in _target_names(node.target):
                self.bind(name, node.value, index, line=node.lineno)
            self.visit(node.value)

    def visit_AugAssign(self, node):
        for name, _ in _target_names(node.target):
            self.bind(name, ast.BinOp(left=ast.Name(name, ast.Load()), op=node.op, right=node.value), line=node.lineno)
        self.visit(node.value)
        if not isinstance(node.target, ast.Name):
            self.visit(node.target)

    def visit_NamedExpr(self, node):
        self.bind(node.target.id, node.value, line=node.lineno)
        self.visit(node.value)

    def visit_For(self, node):
        for name, index in _target_names(node.target):
            self.bind(name, node.iter, index, iterate=True, line=node.lineno)
        self.visit(node.iter)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node):
        for name, index in _target_names(node.target):
            self.bind(name, node.iter, index, iterate=True, line=getattr(node.iter, "lineno", 0))
        self.visit(node.iter)
        for cond in node.ifs:
            self.visit(cond)

    def visit_withitem(self, node):
        if node.optional_vars is not None:
            for name, index in _target_names(node.optional_vars):
                self.bind(name, node.context_expr, index, line=getattr(node.context_expr, "lineno", 0))
        self.visit(node.context_expr)

    def visit_Return(self, node):
        if node.value is not None:
            self.f.returns.append(node.value)
            self.visit(node.value)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.f.refs.add(node.id)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name):
            self.f.attr_refs.add((node.value.id, node.attr))
        self.visit(node.value)

    def visit_Call(self, node):
        self.f.calls.append(node)
        self.generic_visit(node)

    def visit_If(self, node):
        # code under `if __name__ == "__main__":` never runs when the harness imports the module;
        # a branch taken only under the CPU interpreter (TRITON_INTERPRET) never runs on the GPU
        side = interpreter_branch(node.test)
        if _is_main_guard(node.test) or side == "body":
            self.program.dead.append((node.lineno, _end(node.body[-1])))
            self.visit(node.test)
            for stmt in node.orelse:
                self.visit(stmt)
            return
        if side == "orelse":
            self.visit(node.test)
            for stmt in node.body:
                self.visit(stmt)
            if node.orelse:
                self.program.dead.append((node.orelse[0].lineno, _end(node.orelse[-1])))
            return
        self.generic_visit(node)

    def visit_IfExp(self, node):
        side = interpreter_branch(node.test)
        if side == "body":
            self.visit(node.orelse)
        elif side == "orelse":
            self.visit(node.body)
        else:
            self.generic_visit(node)


def _end(node) -> int:
    return getattr(node, "end_lineno", None) or node.lineno


_INTERPRET_NAME = re.compile(r"(?i)interpret")


def _mentions_interpreter(expr: ast.expr) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and _INTERPRET_NAME.search(n.id):
            return True
        if isinstance(n, ast.Attribute) and _INTERPRET_NAME.search(n.attr):
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value == "TRITON_INTERPRET":
            return True
    return False


def interpreter_branch(test: ast.expr) -> str | None:
    """Which branch of an ``if`` runs only under the CPU interpreter: "body" for ``if INTERPRET``
    (or ``if INTERPRET or not x.is_cuda``), "orelse" for ``if not INTERPRET`` (or ``not INTERPRET and
    ...`` negated as a whole); None when the test does not say."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = interpreter_branch(test.operand)
        return {"body": "orelse", "orelse": "body"}.get(inner) if inner else None
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        # the body runs when any operand holds: interpreter-only if one operand is "interpreter"
        # and the others are CPU-only tests (not x.is_cuda, device.type == "cpu")
        kinds = [interpreter_branch(v) for v in test.values]
        if "body" in kinds and all(k == "body" or _cpu_only(v) for k, v in zip(kinds, test.values, strict=True)):
            return "body"
        return None
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        kinds = [interpreter_branch(v) for v in test.values]
        if "body" in kinds:
            return "body"   # the body needs the interpreter
        return None
    if isinstance(test, (ast.Name, ast.Attribute)) and _mentions_interpreter(test):
        return "body"
    if isinstance(test, ast.Compare) and _mentions_interpreter(test) and len(test.ops) == 1:
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and str(right.value) in ("1", "True", "true"):
            return "body" if isinstance(test.ops[0], (ast.Eq, ast.Is)) else "orelse"
        if isinstance(right, ast.Constant) and str(right.value) in ("0", "False", "false", ""):
            return "orelse" if isinstance(test.ops[0], (ast.Eq, ast.Is)) else "body"
    return None


def _cpu_only(test: ast.expr) -> bool:
    text = ast.unparse(test)
    return bool(re.fullmatch(r"not\s+[\w.]+\.is_cuda|[\w.]+\.device\.type\s*==\s*['\"]cpu['\"]"
                             r"|not\s+torch\.cuda\.is_available\(\)", text))


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


@dataclass
class ClassInfo:
    name: str
    bases: list[str]
    methods: dict[str, str] = field(default_factory=dict)    # method name -> qualname
    attrs: dict[str, list[tuple[str, ast.expr]]] = field(default_factory=dict)  # self.x = value (scope qualname, value)


@dataclass
class Value:
    """What an expression can be: ``numbers`` (None: not only literals, or too many), every name
    and callee it depends on (``deps``), and the source texts it was built from (``texts``)."""
    numbers: frozenset | None
    deps: frozenset
    texts: tuple
    bounds: tuple = (-math.inf, math.inf)   # an interval holding it when ``numbers`` is unknown

    @property
    def interval(self) -> tuple:
        if self.numbers:
            try:
                return (min(self.numbers), max(self.numbers))
            except TypeError:
                return self.bounds
        return self.bounds

    @property
    def constant(self) -> bool:
        return self.numbers is not None and len(self.numbers) == 1

    def varies(self) -> bool:
        """Not one fixed number: several possible numbers, or a value computed from inputs."""
        return not self.constant


class Program:
    """Scopes, the call graph and value resolution of one Python source."""

    def __init__(self, source: str):
        self.tree = ast_parse.parse(source)
        self._entries: set[str] = set()
        self.dead: list[tuple[int, int]] = []    # line ranges that never run on the GPU
        self.loops: dict[int, ast.AST] = {n.lineno: n for n in ast.walk(self.tree) if isinstance(n, (ast.For, ast.While))}
        self.funcs: dict[str, Func] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.module = Func("<module>", "<module>", 1, source.count("\n") + 1)
        self.funcs["<module>"] = self.module
        collector = _ScopeCollector(self.module, self)
        for stmt in self.tree.body:
            collector.visit(stmt)
        # kernels made with triton.jit(fn) in host code
        for f in list(self.funcs.values()):
            for call in f.calls:
                if re.search(r"(^|\.)jit$", _call_name(call.func)) and "torch" not in _call_name(call.func):
                    for a in call.args:
                        if isinstance(a, ast.Name):
                            for q in self.by_name(a.id):
                                self.funcs[q].kernel = True

    # -- building ------------------------------------------------------------------------------
    def _qual(self, node, cls: str | None, parent: Func | None) -> str:
        if cls:
            return f"{cls}.{node.name}"
        if parent is not None and parent.qualname != "<module>":
            return f"{parent.qualname}.{node.name}"
        return node.name

    def _add_function(self, node, cls: str | None, parent: Func | None):
        qual = self._qual(node, cls, parent)
        a = node.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        params = (positional + ([a.vararg.arg] if a.vararg else []) + [p.arg for p in a.kwonlyargs]
                  + ([a.kwarg.arg] if a.kwarg else []))
        defaults = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None})
        f = Func(qual, node.name, node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno, cls=cls,
                 parent=parent.qualname if parent is not None and parent.qualname != "<module>" else None,
                 params=params, defaults=defaults, kernel=any(_is_jit_decorator(d) for d in node.decorator_list),
                 decorators=list(node.decorator_list))
        if qual in self.funcs:   # a redefinition (or an overload): keep both under distinct names
            qual = f"{qual}@{node.lineno}"
            f.qualname = qual
        self.funcs[qual] = f
        collector = _ScopeCollector(f, self)
        for d in node.decorator_list:
            collector.visit(d)
        for stmt in node.body:
            collector.visit(stmt)
        return qual

    def _add_class(self, node, parent: Func | None):
        info = ClassInfo(node.name, [_call_name(b) for b in node.bases])
        self.classes[node.name] = info
        body_scope = self.module if parent is None else parent
        collector = _ScopeCollector(body_scope, self)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._add_function(stmt, cls=node.name, parent=None)
                info.methods[stmt.name] = f"{node.name}.{stmt.name}"
            else:
                collector.visit(stmt)

    def _attr_assign(self, scope: Func, target: ast.Attribute, value: ast.expr):
        if isinstance(target.value, ast.Name) and target.value.id in ("self", "cls") and scope.cls:
            info = self.classes.get(scope.cls)
            if info is not None:
                info.attrs.setdefault(target.attr, []).append((scope.qualname, value))

    # -- lookups -------------------------------------------------------------------------------
    def by_name(self, name: str) -> list[str]:
        return [q for q, f in self.funcs.items() if f.name == name and f.cls is None and f.parent is None]

    def kernels(self) -> list[Func]:
        return [f for f in self.funcs.values() if f.kernel]

    def resolve(self, name: str, scope: Func) -> list[str]:
        """Functions (qualnames) a bare name read in ``scope`` can denote. A name a function
        assigns (or takes as a parameter) is local to it in Python and shadows a module-level def
        of the same name (``rms_norm = x * r`` in a kernel does not reach ``def rms_norm``); what
        it was assigned from is read, and reached, where it is assigned."""
        s: Func | None = scope
        while s is not None:
            if name in s.nested:
                return [s.nested[name]]
            if s is not self.module and (name in s.bindings or name in s.params):
                return []
            s = self.funcs.get(s.parent) if s.parent else None
        return self.by_name(name)

    def aliases(self) -> dict[str, str]:
        """Module-level names bound only to a dotted name (``tl_exp2 = tl.exp2``; in a version
        check, ``if triton >= 3: fast_expf = tl.math.exp else: fast_expf = tl.math.fast_expf``, the
        first arm, the newer API): name -> the dotted name, so a call ``tl_exp2(x)`` is read as
        ``tl.exp2(x)``."""
        out = {}
        for name, bindings in self.module.bindings.items():
            if self.by_name(name) or name in self.classes:
                continue
            targets = []
            for b in bindings:
                v = b.value
                if b.index is not None or b.iterate or not isinstance(v, ast.Attribute):
                    break
                text = _call_name(v)
                if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", text):
                    break
                targets.append(text)
            else:
                if targets:
                    out[name] = targets[0]
        return out

    def method(self, cls: str, name: str, seen=None) -> list[str]:
        info = self.classes.get(cls)
        if info is None:
            return []
        if name in info.methods:
            return [info.methods[name]]
        seen = seen or set()
        seen.add(cls)
        out = []
        for b in info.bases:
            if b not in seen:
                out += self.method(b.split(".")[-1], name, seen)
        return out

    # -- values ----------------------------------------------------------------------------------
    def value(self, expr: ast.expr, scope: Func, depth: int = 0, seen: frozenset = frozenset()) -> Value:
        """Numbers an expression can take and what it depends on (see the module docstring)."""
        texts = (_call_name(expr),)
        if depth > MAX_DEPTH:
            return Value(None, frozenset(), texts)
        if isinstance(expr, ast.Constant):
            v = expr.value
            if isinstance(v, bool):
                return Value(frozenset([int(v)]), frozenset(), texts)
            if isinstance(v, (int, float)):
                return Value(frozenset([v]), frozenset(), texts)
            return Value(None, frozenset(), texts)
        if isinstance(expr, ast.Name):
            return self._name_value(expr.id, scope, depth, seen)
        if isinstance(expr, ast.UnaryOp):
            inner = self.value(expr.operand, scope, depth + 1, seen)
            return Value(_apply1(expr.op, inner.numbers), inner.deps, texts + inner.texts)
        if isinstance(expr, ast.BinOp):
            a, b = self.value(expr.left, scope, depth + 1, seen), self.value(expr.right, scope, depth + 1, seen)
            return Value(_apply2(expr.op, a.numbers, b.numbers), a.deps | b.deps, texts + a.texts + b.texts,
                         _interval2(expr.op, a.interval, b.interval))
        if isinstance(expr, ast.IfExp):
            side = interpreter_branch(expr.test)
            if side:   # the interpreter-only side never runs on the GPU
                return self.value(expr.orelse if side == "body" else expr.body, scope, depth + 1, seen)
            a, b = self.value(expr.body, scope, depth + 1, seen), self.value(expr.orelse, scope, depth + 1, seen)
            t = self.value(expr.test, scope, depth + 1, seen)
            nums = a.numbers | b.numbers if a.numbers is not None and b.numbers is not None else None
            return Value(_cap(nums), a.deps | b.deps | t.deps, texts + a.texts + b.texts + t.texts,
                         _union([a.interval, b.interval]))
        if isinstance(expr, ast.Call):
            return self._call_value(expr, scope, depth, seen)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            parts = [self.value(e, scope, depth + 1, seen) for e in expr.elts]
            return Value(None, frozenset().union(*[p.deps for p in parts]) if parts else frozenset(),
                         texts + tuple(t for p in parts for t in p.texts))
        if isinstance(expr, ast.Subscript):
            base = self.value(expr.value, scope, depth + 1, seen)
            idx = self.value(expr.slice, scope, depth + 1, seen)
            element = self._element(expr.value, expr.slice, scope, depth, seen)
            if element is not None:
                return element
            return Value(None, base.deps | idx.deps, texts + base.texts)
        if isinstance(expr, ast.Attribute):
            base = self.value(expr.value, scope, depth + 1, seen) if not isinstance(expr.value, ast.Name) else \
                Value(None, frozenset([expr.value.id]), ())
            return Value(None, base.deps | {_call_name(expr)}, texts + base.texts)
        if isinstance(expr, ast.Compare):
            parts = [self.value(e, scope, depth + 1, seen) for e in [expr.left, *expr.comparators]]
            return Value(frozenset([0, 1]), frozenset().union(*[p.deps for p in parts]), texts)
        if isinstance(expr, ast.BoolOp):
            parts = [self.value(e, scope, depth + 1, seen) for e in expr.values]
            nums = frozenset().union(*[p.numbers for p in parts]) if all(p.numbers is not None for p in parts) else None
            return Value(_cap(nums), frozenset().union(*[p.deps for p in parts]), texts)
        deps = frozenset(n.id for n in ast.walk(expr) if isinstance(n, ast.Name))
        return Value(None, deps, texts)

    def _element(self, container: ast.expr, index: ast.expr, scope: Func, depth: int, seen) -> Value | None:
        """x[i] of a literal tuple/list x (or a name bound to one) and a constant i; cfg["key"] of
        a config dict (see ``_dict_entries``)."""
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            entries = self._dict_entries(container, index.value, scope, depth)
            if not entries:
                return None
            values = [self.value(e, s, depth + 1, seen) for s, e in entries]
            nums = frozenset().union(*[v.numbers for v in values]) if all(v.numbers is not None for v in values) else None
            return Value(_cap(nums), frozenset().union(*[v.deps for v in values]), tuple(t for v in values for t in v.texts),
                         _union([v.interval for v in values]))
        idx = self.value(index, scope, depth + 1, seen)
        if not idx.constant:
            return None
        i = next(iter(idx.numbers))
        node = container
        if isinstance(node, ast.Name):
            bindings = self._bindings(node.id, scope)
            if len(bindings) != 1 or bindings[0][1].index is not None or bindings[0][1].iterate:
                return None
            node, scope = bindings[0][1].value, bindings[0][0]
        if isinstance(node, (ast.Tuple, ast.List)) and isinstance(i, int) and -len(node.elts) <= i < len(node.elts):
            return self.value(node.elts[i], scope, depth + 1, seen)
        return None

    def _dict_entries(self, container: ast.expr, key: str, scope: Func, depth: int) -> list[tuple[Func, ast.expr]] | None:
        """The expressions a config dict gives ``key``: a dict literal or ``dict(key=...)`` call, a
        name bound to one, a table of them indexed by anything (``CONFIGS[arch]``), or a call of a
        function of the file returning them (``cfg = _config(M, N); cfg["num_warps"]``); None when
        some source is not such a dict (then nothing is claimed)."""
        if depth > MAX_DEPTH:
            return None
        node = container
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == key:
                    return [(scope, v)]
            return None
        if isinstance(node, ast.Call) and _call_name(node.func) == "dict":
            for kw in node.keywords:
                if kw.arg == key:
                    return [(scope, kw.value)]
            return None
        if isinstance(node, ast.IfExp):
            a = self._dict_entries(node.body, key, scope, depth + 1)
            b = self._dict_entries(node.orelse, key, scope, depth + 1)
            return a + b if a is not None and b is not None else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Dict)):
            table = node.value
            if isinstance(table, ast.Name):
                bs = self._bindings(table.id, scope)
                if len(bs) != 1 or bs[0][1].index is not None or bs[0][1].iterate:
                    return None
                table, tscope = bs[0][1].value, bs[0][0]
            else:
                tscope = scope
            if isinstance(table, ast.Dict) and table.values:
                out = []
                for v in table.values:
                    got = self._dict_entries(v, key, tscope, depth + 1)
                    if got is None:
                        return None
                    out += got
                return out
            return None
        if isinstance(node, ast.Name):
            bs = self._bindings(node.id, scope)
            if not bs or any(b.index is not None or b.iterate for _, b in bs):
                return None
            out = []
            for s, b in bs:
                got = self._dict_entries(b.value, key, s, depth + 1)
                if got is None:
                    return None
                out += got
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            targets = self.resolve(node.func.id, scope)
            out = []
            for q in targets:
                f = self.funcs[q]
                for r in f.returns:
                    got = self._dict_entries(r, key, f, depth + 1)
                    if got is None:
                        return None
                    out += got
            return out or None
        return None

    def _bindings(self, name: str, scope: Func) -> list[tuple[Func, Binding]]:
        s: Func | None = scope
        while s is not None:
            if name in s.bindings:
                return [(s, b) for b in s.bindings[name]]
            if name in s.params:
                return []
            s = self.funcs.get(s.parent) if s.parent else None
        return [(self.module, b) for b in self.module.bindings.get(name, [])]

    def _name_value(self, name: str, scope: Func, depth: int, seen: frozenset) -> Value:
        key = (scope.qualname, name)
        deps = frozenset([name])
        if key in seen:
            return Value(None, deps, ())
        seen = seen | {key}
        bindings = self._bindings(name, scope)
        if bindings:
            values = [self._binding_value(b, s, depth, seen) for s, b in bindings]
            nums = frozenset().union(*[v.numbers for v in values]) if all(v.numbers is not None for v in values) else None
            return Value(_cap(nums), deps.union(*[v.deps for v in values]), tuple(t for v in values for t in v.texts),
                         _union([v.interval for v in values]))
        owner = self._param_owner(name, scope)
        if owner is not None:
            return self._param_value(owner, name, depth, seen)
        return Value(None, deps, ())

    def _param_owner(self, name: str, scope: Func) -> Func | None:
        s: Func | None = scope
        while s is not None:
            if name in s.params:
                return s
            if name in s.bindings:
                return None
            s = self.funcs.get(s.parent) if s.parent else None
        return None

    def _binding_value(self, b: Binding, scope: Func, depth: int, seen) -> Value:
        if b.iterate:
            elements = self._iter_elements(b.value, scope, depth, seen)
            if b.index is not None and elements is not None:
                elements = [e.elts[b.index] if isinstance(e, (ast.Tuple, ast.List)) and b.index < len(e.elts) else None
                            for e in elements]
            if elements and all(e is not None for e in elements):
                values = [self.value(e, scope, depth + 1, seen) for e in elements]
                nums = frozenset().union(*[v.numbers for v in values]) if all(v.numbers is not None for v in values) else None
                return Value(_cap(nums), frozenset().union(*[v.deps for v in values]), tuple(t for v in values for t in v.texts))
            inner = self.value(b.value, scope, depth + 1, seen)
            return Value(None, inner.deps, inner.texts)
        if b.index is not None:
            # a, b = f(...) / a, b = (x, y): the index-th element
            v = b.value
            if isinstance(v, (ast.Tuple, ast.List)) and b.index < len(v.elts):
                return self.value(v.elts[b.index], scope, depth + 1, seen)
            if isinstance(v, ast.Call):
                returned = self._returned(v, scope, depth, seen, b.index)
                if returned is not None:
                    return returned
            inner = self.value(v, scope, depth + 1, seen)
            return Value(None, inner.deps, inner.texts)
        return self.value(b.value, scope, depth + 1, seen)

    def _iter_elements(self, it: ast.expr, scope: Func, depth: int, seen) -> list[ast.expr] | None:
        if isinstance(it, (ast.Tuple, ast.List, ast.Set)):
            return list(it.elts)
        if isinstance(it, ast.Name):
            bs = self._bindings(it.id, scope)
            if len(bs) == 1 and not bs[0][1].iterate and bs[0][1].index is None:
                return self._iter_elements(bs[0][1].value, bs[0][0], depth + 1, seen) if depth < MAX_DEPTH else None
            return None
        if isinstance(it, ast.Call) and _call_name(it.func) == "range":
            nums = [self.value(a, scope, depth + 1, seen) for a in it.args]
            if all(n.constant for n in nums) and nums:
                bounds = [next(iter(n.numbers)) for n in nums]
                if all(isinstance(x, int) for x in bounds):
                    values = list(range(*bounds))
                    if len(values) <= MAX_VALUES:
                        return [ast.Constant(x) for x in values]
        return None

    def _returned(self, call: ast.Call, scope: Func, depth: int, seen, index: int | None) -> Value | None:
        """The value a call to a function of this file returns (the index-th element of a tuple)."""
        targets = self.resolve(call.func.id, scope) if isinstance(call.func, ast.Name) else []
        if not targets:
            return None
        values = []
        for q in targets:
            f = self.funcs[q]
            for r in f.returns:
                if index is not None:
                    if isinstance(r, (ast.Tuple, ast.List)) and index < len(r.elts):
                        values.append(self.value(r.elts[index], f, depth + 1, seen))
                    else:
                        values.append(Value(None, frozenset(), ()))
                else:
                    values.append(self.value(r, f, depth + 1, seen))
        if not values:
            return None
        nums = frozenset().union(*[v.numbers for v in values]) if all(v.numbers is not None for v in values) else None
        return Value(_cap(nums), frozenset().union(*[v.deps for v in values]) | {_call_name(call.func)},
                     tuple(t for v in values for t in v.texts), _union([v.interval for v in values]))

    def _call_value(self, call: ast.Call, scope: Func, depth: int, seen) -> Value:
        name = _call_name(call.func)
        if re.search(r"(^|\.)(load|atomic_\w+)$", name):
            # a loaded value is memory contents: it does not depend on the address's arithmetic
            return Value(None, frozenset([name]), (_call_name(call),))
        args = [self.value(a, scope, depth + 1, seen) for a in call.args]
        kws = [self.value(k.value, scope, depth + 1, seen) for k in call.keywords]
        if isinstance(call.func, ast.Attribute) and not isinstance(call.func.value, ast.Name):
            kws.append(self.value(call.func.value, scope, depth + 1, seen))   # (n - 1).bit_length(): n
        deps = frozenset([name]).union(*[a.deps for a in args + kws]) if args or kws else frozenset([name])
        texts = (_call_name(call),) + tuple(t for a in args + kws for t in a.texts)
        base = name.split(".")[-1]
        nums = None
        bounds = (-math.inf, math.inf)
        if base in ("max", "min") and len(args) >= 2 and not call.keywords:
            ivs = [a.interval for a in args]
            pick = max if base == "max" else min
            bounds = (pick(i[0] for i in ivs), pick(i[1] for i in ivs))
        if base in ("max", "min") and args and all(a.numbers is not None for a in args) and not call.keywords:
            combos = list(itertools.islice(itertools.product(*[sorted(a.numbers) for a in args]), MAX_VALUES * 4))
            nums = frozenset((max if base == "max" else min)(c) for c in combos)
        elif base in ("int", "float") and len(args) == 1 and args[0].numbers is not None:
            nums = frozenset((int if base == "int" else float)(x) for x in args[0].numbers)
        elif base in ("next_power_of_2", "cdiv") and all(a.numbers is not None for a in args) and args:
            try:
                if base == "next_power_of_2":
                    nums = frozenset(1 << (int(x) - 1).bit_length() if x > 0 else 1 for x in args[0].numbers)
                elif len(args) == 2:
                    nums = frozenset(-(-int(a) // int(b)) for a in args[0].numbers for b in args[1].numbers if b)
            except (TypeError, ValueError):
                nums = None
        else:
            returned = self._returned(call, scope, depth, seen, None) if isinstance(call.func, ast.Name) else None
            if returned is not None:
                return Value(returned.numbers, deps | returned.deps, texts + returned.texts, returned.bounds)
        return Value(_cap(nums), deps, texts, bounds)

    def _param_value(self, owner: Func, name: str, depth: int, seen) -> Value:
        """A parameter's value: the arguments its call sites pass (and its default)."""
        deps = frozenset([name])
        values = []
        index = owner.params.index(name)
        if owner.cls and owner.params and owner.params[0] in ("self", "cls", "ctx"):
            index -= 1
        for site_scope, call in self.call_sites(owner):
            bound = _bound_arg(call, name, index)
            if bound is not None:
                values.append(self.value(bound, site_scope, depth + 1, seen))
            elif name in owner.defaults:
                values.append(self.value(owner.defaults[name], owner, depth + 1, seen))
            else:
                values.append(Value(None, frozenset(), ()))
        if not values:
            if name in owner.defaults and owner.qualname not in self._entries:
                values.append(self.value(owner.defaults[name], owner, depth + 1, seen))
            else:  # an entry point's parameter: an input
                return Value(None, deps | {f"param:{name}"}, ())
        nums = frozenset().union(*[v.numbers for v in values]) if all(v.numbers is not None for v in values) else None
        return Value(_cap(nums), deps.union(*[v.deps for v in values]), tuple(t for v in values for t in v.texts))

    def call_sites(self, f: Func) -> list[tuple[Func, ast.Call]]:
        """Calls of ``f`` by name (or self.name / Cls.name for methods) in the file's scopes; for a
        kernel, its launches ``f[grid](...)``."""
        out = []
        for scope in self.funcs.values():
            for call in scope.calls:
                target = call.func
                if isinstance(target, ast.Subscript):   # kernel[grid](...)
                    target = target.value
                if isinstance(target, ast.Name) and f.cls is None and f.qualname in self.resolve(target.id, scope):
                    out.append((scope, call))
                elif isinstance(target, ast.Attribute) and f.cls and target.attr == f.name:
                    out.append((scope, call))
        return out


def _bound_arg(call: ast.Call, name: str, index: int) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if 0 <= index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def _union(intervals) -> tuple:
    intervals = list(intervals)
    if not intervals:
        return (-math.inf, math.inf)
    return (min(i[0] for i in intervals), max(i[1] for i in intervals))


def _interval2(op, a: tuple, b: tuple) -> tuple:
    """Interval arithmetic for the few operators sizes are computed with (non-negative operands)."""
    try:
        if isinstance(op, ast.Add):
            return (a[0] + b[0], a[1] + b[1])
        if isinstance(op, ast.Sub):
            return (a[0] - b[1], a[1] - b[0])
        if a[0] >= 0 and b[0] >= 0:
            if isinstance(op, ast.Mult):
                return (a[0] * b[0], a[1] * b[1])
            if isinstance(op, (ast.FloorDiv, ast.Div)) and b[0] > 0:
                return (a[0] / b[1] if b[1] != math.inf else 0, a[1] / b[0])
    except (TypeError, ValueError, OverflowError):
        pass
    return (-math.inf, math.inf)


def _cap(nums):
    return nums if nums is not None and len(nums) <= MAX_VALUES else None


_OPS2 = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
         ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
         ast.Pow: lambda a, b: a ** b if abs(b) < 64 else None, ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None,
         ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b}


def _apply2(op, a, b):
    if a is None or b is None or type(op) not in _OPS2:
        return None
    out = set()
    for x, y in itertools.islice(itertools.product(sorted(a), sorted(b)), MAX_VALUES * 4):
        try:
            r = _OPS2[type(op)](x, y)
        except (ZeroDivisionError, TypeError, ValueError, OverflowError):
            return None
        if r is None:
            return None
        out.add(r)
    return _cap(frozenset(out))


def _apply1(op, a):
    if a is None:
        return None
    if isinstance(op, ast.USub):
        return frozenset(-x for x in a)
    if isinstance(op, ast.UAdd):
        return a
    if isinstance(op, ast.Not):
        return frozenset(int(not x) for x in a)
    return None


# -- reachability ------------------------------------------------------------------------------------
@dataclass
class Reach:
    """What is reachable from the entry point: Python functions (qualnames), kernels (names), the
    launches of each kernel, CUDA functions, and a note on how it was decided."""
    functions: set[str]
    kernels: set[str]
    launched: dict[str, list[tuple[str, ast.Call]]]    # kernel -> (host scope qualname, launch call)
    helpers: dict[str, set[str]]                       # kernel -> jit helpers it (transitively) calls
    cuda_modules: bool = False                          # a load_inline/load module is used
    cuda_attrs: set[str] = field(default_factory=set)   # attributes read off such a module
    note: str = ""


CUDA_LOADERS = re.compile(r"(^|\.)(load_inline|load|RawModule|RawKernel|compile_kernel)$")


def autograd_function(program: Program, cls: str, seen: frozenset = frozenset()) -> bool:
    """Is the class a ``torch.autograd.Function`` (a base named ``Function``, directly or through
    classes of the file)?"""
    info = program.classes.get(cls)
    if info is None or cls in seen:
        return False
    return any(b.split(".")[-1] == "Function" or autograd_function(program, b.split(".")[-1], seen | {cls})
               for b in info.bases)


def reachable(program: Program, entry: str | None, backward: bool = True) -> Reach:
    """What runs from ``entry``. ``backward``: whether a gradient is taken (the task asks for one),
    so the ``backward`` of a ``torch.autograd.Function`` runs after its ``forward``; without one a
    Function reached through ``Cls.apply`` runs its forward only."""
    roots = ([entry] if entry in program.funcs else program.by_name(entry)) if entry else []   # run, or Cls.method
    roots = [q for q in roots if not program.funcs[q].kernel]
    if backward:   # the entry is a Function's method (Cls.forward): the harness takes the gradient through it
        roots += [m for q in roots if program.funcs[q].cls and autograd_function(program, program.funcs[q].cls)
                  for m in program.method(program.funcs[q].cls, "backward") if m not in roots]
    note = ""
    if not roots:
        roots = [q for q, f in program.funcs.items() if not f.kernel and q != "<module>"]
        note = (f"no {entry}() in the file: every host function is an entry" if entry else "every host function is an entry")
    program._entries = set(roots)
    seen: set[str] = set()
    module_vars_done: set[str] = set()
    cuda_modules = False
    cuda_attrs: set[str] = set()
    loader_vars = {name for name, bs in program.module.bindings.items()
                   if any(isinstance(b.value, ast.Call) and CUDA_LOADERS.search(_call_name(b.value.func)) for b in bs)}
    work = list(roots)
    # the module's own decorators/aliases are read when a name refers to them (below), not eagerly

    def reach_name(name: str, scope: Func):
        nonlocal cuda_modules
        for q in program.resolve(name, scope):
            work.append(q)
        if name in program.classes:
            skip = () if backward or not autograd_function(program, name) else ("backward",)
            work.extend(q for m, q in program.classes[name].methods.items() if m not in skip)
        if name in program.module.bindings and name not in module_vars_done and not program.by_name(name):
            module_vars_done.add(name)
            pseudo = Func(f"<var {name}>", name, 0, 0)
            for b in program.module.bindings[name]:
                for n in ast.walk(b.value):
                    if isinstance(n, ast.Name):
                        pseudo.refs.add(n.id)
                    elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                        pseudo.attr_refs.add((n.value.id, n.attr))
            visit_refs(pseudo, program.module)
        if name in loader_vars:
            cuda_modules = True

    def visit_refs(f: Func, scope: Func):
        nonlocal cuda_modules
        for name in f.refs:
            reach_name(name, scope)
        for base, attr in f.attr_refs:
            if base in ("self", "cls") and f.cls:
                work.extend(program.method(f.cls, attr))
                info = program.classes.get(f.cls)
                if info and attr in info.attrs:
                    for _, v in info.attrs[attr]:
                        for n in ast.walk(v):
                            if isinstance(n, ast.Name):
                                reach_name(n.id, scope)
            elif base in program.classes:
                work.extend(program.method(base, attr))
            elif base in loader_vars or _is_local_loader(program, f, base):
                cuda_modules = True
                cuda_attrs.add(attr)

    while work:
        q = work.pop()
        if q in seen or q not in program.funcs:
            continue
        seen.add(q)
        f = program.funcs[q]
        visit_refs(f, f)
    kernels = {program.funcs[q].name for q in seen if program.funcs[q].kernel}
    # launches: kernel[grid](...) in reachable host scopes, resolved through aliases
    launched: dict[str, list[tuple[str, ast.Call]]] = {}
    for q in seen:
        f = program.funcs[q]
        if f.kernel:
            continue
        for call in f.calls:
            if isinstance(call.func, ast.Subscript):
                for k in _kernels_named_by(program, call.func.value, f, kernels):
                    launched.setdefault(k, []).append((q, call))
            else:
                # kernel.run(..., grid=...) / kernel.warmup(...) / wrapper(kernel)[grid] handled above
                if isinstance(call.func, ast.Attribute) and call.func.attr in ("run", "warmup"):
                    for k in _kernels_named_by(program, call.func.value, f, kernels):
                        launched.setdefault(k, []).append((q, call))
    helpers = {}
    by_kernel_name = {f.name: f for f in program.funcs.values() if f.kernel}
    for k in kernels:
        out, stack = set(), [k]
        while stack:
            cur = by_kernel_name.get(stack.pop())
            if cur is None:
                continue
            for n in cur.refs:
                if n in by_kernel_name and n not in out and n != k:
                    out.add(n)
                    stack.append(n)
        # jit functions passed to the kernel at its launches (ACTIVATION=_silu)
        for _, call in launched.get(k, []):
            for a in [*call.args, *[kw.value for kw in call.keywords]]:
                if isinstance(a, ast.Name) and a.id in by_kernel_name and a.id != k:
                    out.add(a.id)
        helpers[k] = out
    return Reach(seen, kernels, launched, helpers, cuda_modules, cuda_attrs, note)


def _is_local_loader(program: Program, f: Func, name: str) -> bool:
    return any(isinstance(b.value, ast.Call) and CUDA_LOADERS.search(_call_name(b.value.func))
               for b in f.bindings.get(name, []))


def _kernels_named_by(program: Program, expr: ast.expr, scope: Func, kernels: set[str], depth: int = 0) -> set[str]:
    """Kernels an expression can denote: a kernel's name, or a name bound to one (an alias, an
    autotune wrapper, a conditional, a table), or a call wrapping one (wrap_triton(k))."""
    out = set()
    if depth > 6:
        return out
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            if n.id in kernels:
                out.add(n.id)
            else:
                bindings = program._bindings(n.id, scope)
                for s, b in bindings:
                    out |= _kernels_named_by(program, b.value, s, kernels, depth + 1)
                owner = None if bindings else program._param_owner(n.id, scope)
                if owner is not None:   # a kernel passed in: the arguments at the call sites
                    index = owner.params.index(n.id)
                    for site_scope, call in program.call_sites(owner):
                        arg = _bound_arg(call, n.id, index)
                        if arg is not None:
                            out |= _kernels_named_by(program, arg, site_scope, kernels, depth + 1)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls") and scope.cls:
            info = program.classes.get(scope.cls)
            for s, v in (info.attrs.get(n.attr, []) if info else []):
                out |= _kernels_named_by(program, v, program.funcs.get(s, scope), kernels, depth + 1)
    return out
