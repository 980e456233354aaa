"""The reports index: one page linking every report page with its headline figures."""
