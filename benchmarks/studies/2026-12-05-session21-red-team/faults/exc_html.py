"""Raises an exception whose message is HTML/script (and a solution label-like markup), to check
that `d2k report`'s HTML page shows reasons escaped.
expect: error; the report holds no live <script> or onerror attribute
"""


def run(x, w, eps):
    raise ValueError("<script>alert('d2k-redteam-g')</script><img src=x onerror=alert(1)>[red]markup[/red]")
