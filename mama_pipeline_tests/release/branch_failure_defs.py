"""Definitions with a failing leaf in one branch (shard s1 of ``a_fails``) and an independent branch, loaded
by ``dagster asset materialize -m`` in the failure-isolation tests."""

import dagster as dg

SHARDS = dg.StaticPartitionsDefinition(["s0", "s1"])
RETRIEVERS = dg.StaticPartitionsDefinition(["bm25", "dense"])


@dg.asset
def root() -> None:
    pass


@dg.asset(partitions_def=SHARDS, deps=[root])
def a_fails(context: dg.AssetExecutionContext) -> None:
    if context.partition_key == "s1":
        raise RuntimeError("injected fault in shard s1")


@dg.asset(deps=[a_fails])
def a_after() -> None:
    pass


@dg.asset(partitions_def=RETRIEVERS, deps=[root])
def b_branch() -> None:
    pass


@dg.asset(deps=[b_branch])
def b_end() -> None:
    pass


@dg.asset(deps=[a_after, b_end])
def z_joint() -> None:
    pass


defs = dg.Definitions(assets=[root, a_fails, a_after, b_branch, b_end, z_joint])
