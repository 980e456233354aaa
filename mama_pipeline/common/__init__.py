"""Shared helpers every area may import; nothing here imports an area."""
