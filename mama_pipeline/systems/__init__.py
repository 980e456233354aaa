"""Answering systems (closed-book and RAG) evaluated on mamabench, graded as HealthBench grades."""
