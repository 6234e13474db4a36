"""Property-based tests (hypothesis) of every reader of outside input: the task, workload and rubric
loaders (through `validate`), the experiment-spec loader, the ingest reader and the agent's tool
arguments. Whatever the input, the outcome is either success or one line naming the file and the
field (a Problem, a D2KError, a tool error) — never a traceback; a refused ingest stores nothing.

Each test counts the distinct malformed inputs it generated; the totals are printed at the end
(`DISTINCT_MALFORMED`). The default profile is derandomized and small (the whole file runs in well
under 30 s on one core); D2K_HYPOTHESIS_PROFILE=explore runs random, longer searches.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
from faults_data import ROOT, results_records, small_content
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from d2k.agent.tools import NAMES, Tools
from d2k.agent.workspace import Workspace
from d2k.content import ContentError, Problem
from d2k.errors import D2KError
from d2k.experiment import spec as spec_mod
from d2k.ingest import ingest
from d2k.store import Store
from d2k.validate import validate

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("explore", max_examples=500, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("D2K_HYPOTHESIS_PROFILE", "ci"))

DISTINCT_MALFORMED: dict[str, set[str]] = defaultdict(set)
ACCEPTED: dict[str, set[str]] = defaultdict(set)


def _record(kind: str, data: bytes, malformed: bool) -> None:
    digest = hashlib.sha1(data).hexdigest()
    (DISTINCT_MALFORMED if malformed else ACCEPTED)[kind].add(digest)
    event(f"{kind}: {'refused' if malformed else 'accepted'}")


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    total = sum(len(v) for v in DISTINCT_MALFORMED.values())
    detail = ", ".join(f"{k} {len(v)}" for k, v in sorted(DISTINCT_MALFORMED.items()))
    accepted = ", ".join(f"{k} {len(v)}" for k, v in sorted(ACCEPTED.items()))
    line = f"property tests: {total} distinct malformed inputs refused in one line ({detail}); accepted: {accepted}"
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print("\n" + line)
    else:
        print(line)


# -- generators ------------------------------------------------------------------------------------
LEAF = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "T", "H", "T * H", "2 ** 1000000", "x[0]", "__import__('os')", "L1.x", "[red]x[/red]",
                     "a\nb", "bfloat16", "float8_e4m3fn", "randn", "bench", "smoke", "guided", "rmsnorm"]),
)
VALUE = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                     max_leaves=6)


def _nodes(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _nodes(value, (*path, i))


def _get(obj, path):
    for key in path:
        obj = obj[key]
    return obj


@st.composite
def mutated(draw, base):
    """``base`` with one to three changes: a value replaced by any JSON-like value (wrong type,
    out of range, an expression), a field deleted, or an unknown field added."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _nodes(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(data, path[:-1]), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "unknown"]))
        if op == "replace":
            parent[key] = draw(VALUE)
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(VALUE)
    return data


def _toml_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_key(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    raise TypeError(type(value))


def toml_dumps(data: dict) -> str:
    """Any dict as TOML (tables and arrays of tables inline): tomllib reads back the same data."""
    return "".join(f"{_toml_key(k)} = {toml_value(v)}\n" for k, v in data.items() if v is not None)


RAW_BYTES = st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))


# -- content: task.toml, workloads, rubric ---------------------------------------------------------
@pytest.fixture(scope="module")
def content(tmp_path_factory):
    return small_content(tmp_path_factory.mktemp("content"))


FILES = ("tasks/rmsnorm/", "workloads/rmsnorm.jsonl", "design_rubrics/rmsnorm.toml")
WHOLE_FILE = re.compile(r"invalid TOML|invalid JSON|not UTF-8|file not found|does not parse|not a JSON object|"
                        r"cannot read|no task found")


def assert_problems_are_one_line(problems: list[Problem]) -> None:
    for p in problems:
        text = str(p)
        assert "\n" not in text and "\r" not in text, repr(text)
        assert p.path.startswith(FILES), text
        # a field, or a line number, or a problem of the whole file
        assert p.field or re.search(r":\d+$", p.path) or WHOLE_FILE.search(p.message), text


def _check_content(root: Path, kind: str, data: bytes) -> None:
    try:
        problems, _ = validate(root, only=["rmsnorm"])
    except ContentError as exc:  # validate reports problems; it never raises them
        pytest.fail(f"validate raised {exc}")
    assert_problems_are_one_line(problems)
    _record(kind, data, bool(problems))


def _restore(root: Path, rel: str):
    (root / rel).write_bytes((ROOT / rel).read_bytes())


TASK = tomllib.loads((ROOT / "tasks/rmsnorm/task.toml").read_text())
RUBRIC = tomllib.loads((ROOT / "design_rubrics/rmsnorm.toml").read_text())
WORKLOADS = [json.loads(line) for line in (ROOT / "workloads/rmsnorm.jsonl").read_text().splitlines() if line.strip()]


@given(st.one_of(mutated(TASK).map(lambda d: toml_dumps(d).encode()), RAW_BYTES))
def test_task_toml(content, data):
    path = content / "tasks/rmsnorm/task.toml"
    try:
        path.write_bytes(data)
        _check_content(content, "task.toml", data)
    finally:
        _restore(content, "tasks/rmsnorm/task.toml")


@given(st.one_of(mutated(RUBRIC).map(lambda d: toml_dumps(d).encode()), RAW_BYTES))
def test_rubric_toml(content, data):
    try:
        (content / "design_rubrics/rmsnorm.toml").write_bytes(data)
        _check_content(content, "rubric", data)
    finally:
        _restore(content, "design_rubrics/rmsnorm.toml")


def _jsonl(records) -> bytes:
    return "".join(json.dumps(r, allow_nan=True) + "\n" for r in records).encode()


@given(st.one_of(mutated(WORKLOADS).map(_jsonl),
                 st.tuples(mutated(WORKLOADS).map(_jsonl), st.integers(0, 2000)).map(lambda t: t[0][: t[1]]),
                 RAW_BYTES))
def test_workloads_jsonl(content, data):
    try:
        (content / "workloads/rmsnorm.jsonl").write_bytes(data)
        _check_content(content, "workloads", data)
    finally:
        _restore(content, "workloads/rmsnorm.jsonl")


# -- the experiment spec ---------------------------------------------------------------------------
SPEC = tomllib.loads((ROOT / "examples/paired.toml").read_text())


@given(st.one_of(mutated(SPEC).map(lambda d: toml_dumps(d).encode()), RAW_BYTES))
def test_experiment_spec(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("spec") / "spec.toml"
    path.write_bytes(data)
    try:
        spec_mod.load(path)
    except D2KError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert message.startswith(f"{path}: "), message
        field = message[len(f"{path}: "):].split(": ", 1)[0]
        assert field and (field in ("invalid TOML", "not UTF-8 text (a binary file?)") or " " not in field
                          or field.startswith("(top level)")), message
        _record("experiment spec", data, True)
    else:
        _record("experiment spec", data, False)


# -- the ingest reader -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ingest_store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("ingest") / "p.duckdb")
    yield store
    store.close()


TABLES = ("environments", "solutions", "runs", "evaluations", "calibrations")


def _rows(store) -> dict:
    return {t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


@st.composite
def results_files(draw):
    tag = f"p{draw(st.integers(0, 10**9))}-"
    records = results_records(draw(st.integers(1, 4)), env_id=f"env-{tag}", run_id=f"run-{tag}", tag=tag)
    how = draw(st.sampled_from(["mutate", "mutate", "truncate", "line", "duplicate", "bytes"]))
    if how == "mutate":
        return _jsonl(draw(mutated(records)))
    data = _jsonl(records)
    if how == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    lines = data.split(b"\n")
    at = draw(st.integers(0, len(lines) - 1))
    if how == "line":
        lines[at] = draw(st.one_of(RAW_BYTES, VALUE.map(lambda v: json.dumps(v).encode())))
    elif how == "duplicate":
        changed = json.loads(lines[min(at, len(lines) - 2)])
        key = draw(st.sampled_from(sorted(changed)))
        changed[key] = draw(VALUE)
        lines.append(json.dumps(changed).encode())
    else:
        lines[at] = lines[at][: len(lines[at]) // 2] + draw(st.binary(min_size=1, max_size=8)) + lines[at][len(lines[at]) // 2:]
    return b"\n".join(lines)


@given(results_files())
def test_ingest_reader(ingest_store, tmp_path_factory, data):
    path = tmp_path_factory.mktemp("results") / "results.jsonl"
    path.write_bytes(data)
    before = _rows(ingest_store)
    try:
        ingest(ingest_store, None, path)
    except D2KError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert re.match(rf"{re.escape(str(path))}:\d+: \S", message), message  # file:line, then the field or the line's fault
        assert _rows(ingest_store) == before, message  # all or nothing
        _record("results.jsonl", data, True)
        return
    after = _rows(ingest_store)
    again = ingest(ingest_store, None, path)  # idempotent: nothing new, no duplicate
    assert all(v == 0 for k, v in again.items() if k != "unchanged"), again
    assert _rows(ingest_store) == after
    _record("results.jsonl", data, False)


CALIBRATION = {"env": {"env_id": "gpu-env", "backend": "cuda", "gpu_name": "Test GPU", "sm_count": 132},
               "calibration": {"copy_bytes_per_s": 4.3e12, "bf16_flops_per_s": 7.6e14, "time": 1_796_000_000.0,
                               "details": {"copy": [1, 2]}}}


@given(st.one_of(mutated(CALIBRATION).map(lambda d: json.dumps(d).encode()), RAW_BYTES))
def test_ingest_calibration(ingest_store, tmp_path_factory, data):
    path = tmp_path_factory.mktemp("calibration") / "calibration.json"
    path.write_bytes(data)
    before = _rows(ingest_store)
    try:
        ingest(ingest_store, None, path)
    except D2KError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert message.startswith(f"{path}: "), message
        assert _rows(ingest_store) == before, message
        _record("calibration.json", data, True)
        return
    after = _rows(ingest_store)
    ingest(ingest_store, None, path)
    assert _rows(ingest_store) == after
    _record("calibration.json", data, False)


# -- the agent's tool arguments --------------------------------------------------------------------
class FakeEvaluator:
    def check(self, path, tag):
        return {"all_passed": False, "path": str(path), "tag": tag}

    def benchmark(self, path):
        return {"all_passed": False, "path": str(path)}


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    workspace = Workspace(tmp_path_factory.mktemp("workspace"))
    workspace.write_file("DESIGN.md", "# design\n")
    workspace.write_file("sol.py", "def run(x):\n    return x\n")
    return Tools(workspace, FakeEvaluator())


ARG_NAMES = st.sampled_from(["path", "content", "workloads"]) | st.text(max_size=8)
ARGS = st.dictionaries(ARG_NAMES, VALUE | st.sampled_from(["sol.py", "DESIGN.md", "../x.py", "/etc/passwd", "a/b.py", "smoke"]),
                       max_size=3)


@given(st.sampled_from(NAMES) | st.text(max_size=12),
       st.one_of(ARGS.map(json.dumps), st.text(max_size=40), st.none(), st.sampled_from(["[", "{}", "null", "[" * 5000])))
def test_tool_arguments(tools, name, raw):
    ok, text = tools.call(name, raw)
    assert isinstance(ok, bool) and isinstance(text, str)
    if ok:
        _record("tool call", f"{name}\x00{raw}".encode("utf-8", "surrogatepass"), False)
        return
    message = json.loads(text)["error"]
    assert message and "\n" not in message, message
    if name in NAMES:
        assert message.startswith(f"{name}: ") or message.startswith("unknown argument(s) "), message
    else:
        assert message.startswith("unknown tool "), message
    try:
        args = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        args = None
    if name in NAMES and isinstance(args, dict):
        from d2k.agent.tools import SCHEMAS

        params = next(s for s in SCHEMAS if s["function"]["name"] == name)["function"]["parameters"]
        known = set(params["properties"])
        wrong = [k for k, v in args.items() if k in known and not isinstance(v, str)]
        if set(args) <= known and set(params["required"]) <= set(args) and len(wrong) == 1:
            assert repr(wrong[0]) in message, message  # a wrong type names its argument
    _record("tool call", f"{name}\x00{raw}".encode("utf-8", "surrogatepass"), True)
