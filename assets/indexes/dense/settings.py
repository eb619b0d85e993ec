"""How the dense index is encoded, built and searched: ``indexes.dense`` of params.yaml."""

from __future__ import annotations

import json
from typing import Any

from assets import params
from assets.indexes.dense.encoders import EncoderOptions
from assets.languages import wiki_language
from assets.storage import SnapshotPaths

__all__ = ["DenseSettings"]


class DenseSettings(params.DenseParams):
    """``indexes.dense``: the params section itself (its fields, defaults and docstrings are
    :class:`assets.params.DenseParams`'s), with what the ``dense`` index type asks of it."""

    def for_language(self, language: str | None) -> DenseSettings:
        """These settings for a snapshot of ``language``: its model of ``language_models`` (``*`` for any
        language not named) in place of ``model``; unchanged when none applies."""
        if not self.language_models or not language:
            return self
        models = dict(self.language_models)
        code = wiki_language(language)
        chosen = models.get(code) or models.get(language) or models.get("*")
        return self if chosen is None or chosen == self.model else self.model_copy(update={"model": chosen})

    def for_snapshot(self, paths: SnapshotPaths) -> DenseSettings:
        """:meth:`for_language` with the language of the snapshot's knowledge source."""
        if not self.language_models or not paths.manifest_file.is_file():
            return self
        return self.for_language(json.loads(paths.manifest_file.read_text()).get("language"))

    def encoder_options(self, device: str | None = None) -> EncoderOptions:
        """The encoder's :class:`EncoderOptions`: these settings' encoder part (on ``device``, default the
        setting's)."""
        options = EncoderOptions.model_validate(self.model_dump(include=set(EncoderOptions.model_fields)))
        return options if device is None else options.on(device)

    def load_encoder(self, device: str | None = None) -> Any:
        """The encoder these settings describe (model, backend, batch size, options)."""
        from assets.indexes.dense.encoders import load_encoder

        return load_encoder(self.model, self.backend, self.batch_size, options=self.encoder_options(device))
