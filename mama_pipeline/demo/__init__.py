"""The one-command demo: every asset in one process, one line per step, a summary at the end."""
