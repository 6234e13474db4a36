"""The trusted batch's null solution (batch.py): the trusted side loads it into a candidate process
of its own, which holds no solution code, to price the batch loop's own work in the same kind of
process as the solution's. The batch command gives that process the outputs to return (allocated
once); this entry point is never what computes them."""


def run(**_):
    return None
