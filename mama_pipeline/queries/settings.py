"""Configuration of the answerability gate and query writer."""

from pydantic import Field

from mama_pipeline.common.settings_base import Section


class QueriesSettings(Section):
    max_words: int = Field(20, ge=1)
