"""The mamaretrieval multi-passage track: questions that need two or three chunks, their labels and measures."""
