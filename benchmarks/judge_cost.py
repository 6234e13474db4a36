"""What an LLM judge run costs: calls and prompt size per solution and per proposal.

    python benchmarks/judge_cost.py

Runs the llm and hybrid code judges on every task's expert and naive solution, and the proposal
judge on every gold proposal, against the test suite's fake endpoint on 127.0.0.1, and reports
calls and prompt characters per solution (with chars/4 as a token estimate: the fake endpoint's
own 'tokens' are word counts, not a tokenizer's).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import judge_responders  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

from d2k.content import Benchmark  # noqa: E402
from d2k.judge import gold  # noqa: E402
from d2k.judge import settings as settings_mod  # noqa: E402
from d2k.judge.pipeline import LLMContext, judge_proposal_text, judge_source  # noqa: E402


def main() -> None:
    bench = Benchmark.load()
    rows = []
    with FakeOpenAI(judge_responders.default) as server, tempfile.TemporaryDirectory() as cache:
        settings = settings_mod.JudgeSettings(model="fake", api_base=server.base_url, cache_dir=cache)
        context = LLMContext(bench, settings)

        def measure(kind, label, fn):
            before = len(server.requests)
            fn()
            new = server.requests[before:]
            chars = [len(json.dumps(r["messages"])) for r in new]
            rows.append((kind, label, len(new), sum(chars)))

        for task_id in bench.tasks:
            for name in ("expert", "naive"):
                source = (bench.task_dir(task_id) / f"{name}.py").read_text()
                for mode in ("llm", "hybrid"):
                    measure(mode, f"{task_id}/{name}",
                            lambda: judge_source(bench, task_id, source, f"{name}.py", f"{task_id}-{name}-{mode}", mode, context))
        for gold_set in gold.load(bench.root, list(bench.tasks), filename="proposals.toml"):
            for proposal in gold_set.solutions:
                text = gold_set.path_of(proposal).read_text()
                measure("proposal", f"{gold_set.task_id}/{proposal.name}",
                        lambda: judge_proposal_text(bench, gold_set.task_id, text, context))
    print(f"{'judge':9} {'runs':>5} {'calls/run':>10} {'prompt chars/run':>17} {'≈tokens/run':>12} {'≈tokens/call':>13}")
    for kind in ("llm", "hybrid", "proposal"):
        sel = [r for r in rows if r[0] == kind]
        if not sel:
            continue
        calls = [r[2] for r in sel]
        chars = [r[3] for r in sel]
        per_call = sum(chars) / max(1, sum(calls)) / 4
        print(f"{kind:9} {len(sel):5d} {statistics.mean(calls):10.1f} {statistics.mean(chars):17.0f} "
              f"{statistics.mean(chars) / 4:12.0f} {per_call:13.0f}")


if __name__ == "__main__":
    main()
