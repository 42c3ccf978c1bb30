"""The bottom layer every other one may import: the shared types (`core.types`) and a
process helper (`core.fate`). It imports nothing of the project."""
