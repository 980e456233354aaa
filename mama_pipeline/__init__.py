"""mama_pipeline: build and evaluate the mamabench and mamaretrieval benchmarks."""
