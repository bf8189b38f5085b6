"""Datasets and their member tasks as they are on disk."""

from agevalx.dataset.loader import Dataset, TaskSource, load_dataset

__all__ = ["Dataset", "TaskSource", "load_dataset"]
