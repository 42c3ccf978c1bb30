"""Prefect's settings, read again from the environment: Prefect reads them when it is
imported, and a process that imported it before its environment changed (the stack's warm
launcher, a command that attached to the stack) must see the new ones."""

from __future__ import annotations


def refresh_prefect_settings() -> None:
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()
