"""Helpers shared by the tests and the benchmarks, the one place either may import from the other's tree:
the fake OpenAI-compatible server, free ports and child-process signals, synthetic judging data, the
judging process a kill test stops, and synthetic release inputs."""
