"""Submissions: a run file of a new retriever or an answers file of a new system, judged, graded and scored."""
