"""d2k: the toolkit and execution backend of D2K-Bench.

Content (tasks, workloads, design rubrics) lives at the top of the repository; this package holds
the code: schemas and loaders, the isolated GPU execution backend, the DuckDB store and the CLI.
Importing ``d2k`` is cheap and touches neither the network nor the GPU.
"""

__version__ = "0.1.0"
