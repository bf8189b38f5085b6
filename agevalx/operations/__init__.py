"""User-level operations, one module each (`ageval <verb>` calls exactly one of these)."""
