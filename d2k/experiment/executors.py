"""Where attempts run: ``local`` (one worker per visible GPU, the default) or ``ray`` (each GPU
worker a Ray actor with ``num_gpus=1``). Both call the same ``run_attempt`` and yield outcomes as
they complete; a worker's exception becomes a failed outcome, never the end of the experiment."""

from __future__ import annotations

import queue
import traceback
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from d2k.experiment.attempt import run_attempt


def _failed(attempt: dict, exc: BaseException) -> dict:
    return {**attempt, "error": f"{type(exc).__name__}: {str(exc)[:500]}", "traceback": traceback.format_exc()[-2000:]}


class LocalExecutor:
    def __init__(self, gpus: list[int] | None, workers: int = 1):
        self.slots: queue.Queue[int | None] = queue.Queue()
        for slot in (gpus if gpus else [None] * max(1, workers)):
            self.slots.put(slot)
        self.n = len(gpus) if gpus else max(1, workers)
        self.label = f"local ({len(gpus)} GPU worker(s))" if gpus else f"local ({self.n} CPU worker(s))"

    def run(self, spec: dict, attempts: list[dict], root: str, work_dir: str, backend: str, client=None):
        def one(attempt):
            gpu = self.slots.get()
            try:
                return run_attempt(spec, attempt, root, work_dir, backend, gpu, client=client)
            except Exception as exc:
                return _failed(attempt, exc)
            finally:
                self.slots.put(gpu)

        with ThreadPoolExecutor(max_workers=self.n) as pool:
            pending = {pool.submit(one, a) for a in attempts}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()


class RayExecutor:
    def __init__(self, address: str | None, num_gpus: int, workers: int):
        import ray

        if not ray.is_initialized():
            if address:
                ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
            else:
                ray.init(num_cpus=max(2, workers), ignore_reinit_error=True, log_to_driver=False,
                         include_dashboard=False)
        self.ray = ray
        self.gpus_per_actor = 1 if num_gpus else 0
        self.n = max(1, num_gpus or workers)
        self.label = f"ray ({self.n} actor(s), num_gpus={self.gpus_per_actor})"

    def run(self, spec: dict, attempts: list[dict], root: str, work_dir: str, backend: str, client=None):
        ray = self.ray

        @ray.remote(num_gpus=self.gpus_per_actor)
        class AttemptWorker:
            def run(self, attempt):
                import os

                # Ray sets CUDA_VISIBLE_DEVICES for the actor; its solution processes inherit it
                gpu = 0 if os.environ.get("CUDA_VISIBLE_DEVICES") else None
                try:
                    return run_attempt(spec, attempt, root, work_dir, backend, gpu)
                except Exception as exc:
                    return _failed(attempt, exc)

        from ray.util import ActorPool

        pool = ActorPool([AttemptWorker.remote() for _ in range(self.n)])
        yield from pool.map_unordered(lambda actor, a: actor.run.remote(a), attempts)

    def shutdown(self):
        self.ray.shutdown()
