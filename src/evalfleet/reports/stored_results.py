"""A store's runs as a benchmark's own commands read them (`benchmarks.interface.StoredResults`):
the latest samples table and the plans, each failure one line naming the fix."""

from __future__ import annotations

import pandas as pd

from evalfleet.core.types import Sample
from evalfleet.engine.store.manifest import read_plan, require_manifest
from evalfleet.engine.store.results import read_result
from evalfleet.storage.base import Store


class StoreResults:
    def __init__(self, store: Store) -> None:
        self.store = store

    def describe(self) -> str:
        return self.store.describe()

    def samples(self, run_id: str) -> pd.DataFrame:
        self._exists(run_id)
        return read_result(self.store, run_id, "samples.parquet")

    def plan(self, run_id: str, benchmark: str) -> list[Sample]:
        self._exists(run_id)
        return read_plan(self.store, run_id, benchmark).samples

    def _exists(self, run_id: str) -> None:
        require_manifest(self.store, run_id)
