"""Reads the home directory of the user d2k runs as. sandbox_settings() hides the home folder
"unless Python lives there"; here the interpreter is /root/.pyenv/..., so all of /root stays
visible (read-only) to the candidate -- with the agents' and tools' configuration folders in it
(.claude, .config, .gitconfig, caches). It leaks only the names and sizes of /root's entries and
the size of /root/.bashrc (no content) in its failure reason: enough to show that anything kept
there (API keys, tokens, notes) could be put in a reason that is stored and shown.
Listed /root before 2026-12-05; the home folder is now hidden, with only the Python under it
bound back.
expect: error
forbid: .claude
"""
import os


def run(x, w, eps):
    names = sorted(os.listdir("/root"))
    size = os.path.getsize("/root/.bashrc")
    raise RuntimeError(f"/root holds {names}; .bashrc is {size} bytes and readable: {os.access('/root/.bashrc', os.R_OK)}")
