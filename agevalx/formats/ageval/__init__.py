"""The ageval task format: ageval.yaml, task.yaml, run.py, evaluator.py (see
docs/datasets-and-tasks.md).

- `format.py`: the adapter, `AgevalDataset` (`open_ageval`, `is_ageval_dataset`) and the
  `AgevalRuntime` hooks the one attempt pipeline calls.
- `loader.py`: reading ageval.yaml and task.yaml (seed 000's rules).
- `lock.py`: resolving one task into its `TaskLock`.
- `verifier.py`: scoring with the task's evaluator.py.
"""
