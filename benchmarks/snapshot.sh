#!/usr/bin/env bash
# Builds snap/ for a device call: HEAD's tracked files (`git archive`, so uncommitted edits and
# ignored files stay out) plus snap/.bases/, the files that study specs pin to a commit, since the
# snapshot has no git history for benchmarks/make_candidates.py to read them from. Carry `snap`
# and `.whl`, and start the command with `cd snap && ln -sfn ../.whl .whl && ...`.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qxF "snap/" .git/info/exclude 2>/dev/null || echo "snap/" >> .git/info/exclude
rm -rf snap && mkdir snap
git archive HEAD | tar -x -C snap
python3 benchmarks/make_candidates.py --write-bases snap
du -sh snap
