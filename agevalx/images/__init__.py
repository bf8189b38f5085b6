"""Environment images: the image node's executor."""
