"""Dagster resources shared by every asset group."""

from pathlib import Path

from dagster import ConfigurableResource

from assets import params


class PipelineSettings(ConfigurableResource):
    """Where artifacts live and how much parallelism a build may use (defaults: ``params.yaml``)."""

    data_dir: str = str(params.data_dir())
    workers: int = int(params.load_params()["knowledge_source"]["workers"])
    rows_per_shard: int = int(params.load_params()["knowledge_source"]["rows_per_shard"])
    progress_bars: bool = False

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)
