"""Versioned releases (hub dataset layout), their verification and publishing, and the change watchers."""
