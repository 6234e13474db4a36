"""Paired agent experiments: specs, attempts, executors, and what happens after each attempt."""
