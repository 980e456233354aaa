"""``mama-pipeline plan --select ...``: the bill of a selection's LLM stages, before anything is sent."""

from __future__ import annotations

from mama_pipeline.common.input_errors import InputError
from mama_pipeline.settings import config_path_from_env, load_settings


def plan(
    select: str, latency_s: float | None = None, rate: float | None = None, gpus_per_server: int | None = None
) -> int:
    """Print the plan of the selection (each stage's bound, and the exact figures where its inputs are in the
    store); exit status 1 when a stage would exceed its budget. Writes nothing into the data folder when its
    store does not exist yet."""
    if latency_s is not None and latency_s <= 0:
        raise InputError(f"--latency-s {latency_s:g}: must be a positive number of seconds")
    if rate is not None and rate <= 0:
        raise InputError(f"--rate {rate:g}: must be a positive number of requests a second per server")
    if gpus_per_server is not None and gpus_per_server <= 0:
        raise InputError(f"--gpus-per-server {gpus_per_server}: must be a positive number of GPUs")
    load_settings()  # a bad configuration file is reported before anything else
    import dagster as dg

    from mama_pipeline.definitions import defs
    from mama_pipeline.plan._plan_text import plan_bills, render
    from mama_pipeline.run_plan import expand_selection, selected_keys

    graph = defs.resolve_asset_graph()
    try:
        keys = expand_selection(graph, selected_keys(defs, select))
    except dg.DagsterInvalidSubsetError as exc:
        raise InputError(f"--select {select!r}: {exc}") from None
    selected = {k.to_user_string() for k in keys}
    rebuilt = {k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys} & selected for k in keys}
    bills = plan_bills(str(config_path_from_env()), selected, latency_s, rebuilt, rate_per_server=rate)
    print(f"LLM plan of --select {select!r} (configuration {config_path_from_env()}); nothing was sent.\n")
    print(render(bills, gpus_per_server), flush=True)
    print(store_line(), flush=True)
    return 1 if any(b.over_budget for b in bills) else 0


def store_line() -> str:
    """The store's predicted size (mama_pipeline.plan._store_size), or why it is not predicted."""
    from mama_pipeline.plan._store_size import prediction_or_reason

    predicted = prediction_or_reason(load_settings())
    if isinstance(predicted, str):
        return f"Store: size not predicted ({predicted})"
    return (
        f"Store: {predicted[1]} (a prediction: rows at the bounds x bytes a row from the column types, answers at "
        "their caps; doctor checks the room for it)"
    )
