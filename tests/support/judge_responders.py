"""Scripted judge replies for the fake OpenAI server (DSPy ChatAdapter format)."""

from __future__ import annotations

import re


def last_user(body: dict) -> str:
    msgs = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = msgs[-1]["content"] if msgs else ""
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def item_id(body: dict) -> str:
    m = re.search(r"\[\[ ## item ## \]\]\s*L\d (\S+):", last_user(body))
    return m.group(1) if m else "?"


def code_reply(verdict: str = "implemented", lines=(3,), confidence: float = 0.8) -> str:
    return (f"[[ ## verdict ## ]]\n{verdict}\n\n[[ ## cited_lines ## ]]\n{list(lines)}\n\n"
            f"[[ ## rationale ## ]]\nScripted rationale.\n\n[[ ## confidence ## ]]\n{confidence}\n\n[[ ## completed ## ]]")


def proposal_reply(verdict: str = "covered", quotes=("We tile the problem.",), confidence: float = 0.7) -> str:
    q = "[" + ", ".join(f'"{x}"' for x in quotes) + "]"
    return (f"[[ ## verdict ## ]]\n{verdict}\n\n[[ ## quotes ## ]]\n{q}\n\n"
            f"[[ ## rationale ## ]]\nScripted rationale.\n\n[[ ## confidence ## ]]\n{confidence}\n\n[[ ## completed ## ]]")


def is_proposal(body: dict) -> bool:
    return "[[ ## design ## ]]" in last_user(body)


def default(body: dict, n: int) -> str:
    return proposal_reply() if is_proposal(body) else code_reply()
