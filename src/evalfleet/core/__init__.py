"""The bottom layer every other one may import: the shared types (`evalfleet.core.types`), a process
helper (`core.fate`) and the collector's setting while a process starts (`core.collector`).
It imports nothing of the project."""
