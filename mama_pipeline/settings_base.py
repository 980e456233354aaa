"""Base class for configuration sections: unknown keys are errors."""
from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
