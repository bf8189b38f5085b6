"""ageval-format datasets: ageval.yaml, task.yaml and the task files' whitelist."""

from agevalx.dataset.loader import DatasetFiles, TaskSource, read_dataset, read_task

__all__ = ["DatasetFiles", "TaskSource", "read_dataset", "read_task"]
