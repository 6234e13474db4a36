"""The ``d2k`` command line. User mistakes end in one line on stderr and exit code 2, never a traceback.

One Typer app (common.py) that each module adds its commands to when imported:

- content.py: ``tasks``, ``validate``, ``task new``
- evaluate.py: ``eval``, ``bench``, ``calibrate``, ``ingest``
- data.py: ``sql``, ``report``, ``analyze``, ``export``, ``demo``
- judge.py: ``judge code | proposal | optimize`` (and the old ``judge SOLUTION ...`` spelling)
- judge_eval.py: ``judge eval`` (and the old ``judge-eval``)
- experiment.py: ``experiment run | status``
- entry.py: ``main``, exit codes and one-line errors
"""

from d2k.cli import content, data, evaluate, experiment, judge, judge_eval  # noqa: F401  (each registers its commands)
from d2k.cli.common import app
from d2k.cli.entry import main

__all__ = ["app", "main"]
