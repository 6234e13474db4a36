"""Design judges: static facts from code (tree-sitter), rubric signals, verdicts, scores, gold sets."""
