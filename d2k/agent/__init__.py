"""The kernel agent: a tool-calling loop over an OpenAI-compatible endpoint, in a sandboxed workspace."""
