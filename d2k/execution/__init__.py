"""The execution backend. Everything in this subpackage imports only the standard library, torch,
triton and numpy: it is what runs on a GPU node, one spawned process per solution."""
