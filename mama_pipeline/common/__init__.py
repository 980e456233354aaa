"""Shared helpers every area may import; they import no area."""
